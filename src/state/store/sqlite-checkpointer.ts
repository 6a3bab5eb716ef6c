import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../basics/log.js';

/**
 * Copies the SQLite write-ahead log back into the database file on a thread of its own.
 *
 * Why: SQLite checkpoints automatically on the connection that commits, every 1,000 WAL pages, and
 * a checkpoint writes and fsyncs the database file: 20–30 ms on a quiet disk, far more on a busy
 * one. better-sqlite3 runs on the event loop's thread, so each of those stalled everything —
 * acknowledgements, heartbeats, every turn. Under 500 busy sessions they came several times a
 * second and halved throughput. Here the bot's own connection never checkpoints
 * (`wal_autocheckpoint = 0`); a worker thread with a second connection runs a PASSIVE checkpoint
 * twice a second, which never blocks the writer (WAL lets both work at once). Commits themselves
 * stay durable against a killed process as before: they are in the WAL the moment they return.
 *
 * If the worker cannot start or dies, the bot's connection goes back to checkpointing itself.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

const EVERY_MS = 500;

// The worker is plain CommonJS evaluated from this string, so it runs the same from the sources,
// the compiled bundle and the tests, with no file of its own to find on disk.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 0 });
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (err) { parentPort.postMessage({ error: String(err && err.message || err) }); }
};
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage({ stopped: true });
  parentPort.close();
});
`;

/**
 * Starts the checkpoint thread for `file`. `fallback()` is called (once) when it cannot run, so the
 * caller can turn the connection's own checkpoints back on.
 */
export function startCheckpointer(file: string, opts: { log?: Logger; fallback: () => void; everyMs?: number }): Checkpointer {
  let fellBack = false;
  const fallBack = (why: string) => {
    if (fellBack) return;
    fellBack = true;
    opts.log?.warn({ file, why }, 'store: SQLite checkpoints run on the main thread again');
    opts.fallback();
  };
  let worker: Worker;
  try {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, everyMs: opts.everyMs ?? EVERY_MS } });
  } catch (err) {
    fallBack((err as Error).message);
    return { stop: async () => undefined };
  }
  worker.unref();
  let stopping = false;
  let lastErrorLog = 0;
  worker.on('message', (m: { error?: string }) => {
    // A checkpoint can meet a busy lock now and then; it simply runs again on the next tick.
    if (m.error && Date.now() - lastErrorLog > 60_000) {
      lastErrorLog = Date.now();
      opts.log?.warn({ file, err: m.error }, 'store: a background checkpoint failed; it is retried');
    }
  });
  worker.on('error', (err: Error) => fallBack(err.message));
  worker.on('exit', (code) => {
    if (!stopping) fallBack(`the checkpoint thread exited (${code})`);
  });
  return {
    async stop() {
      if (stopping) return;
      stopping = true;
      const done = new Promise<void>((resolve) => {
        worker.once('exit', () => resolve());
        setTimeout(() => void worker.terminate().then(() => resolve()), 5_000).unref();
      });
      // Unreferenced while it works, so it never keeps the bot alive; referenced now, so a process
      // with nothing else left to do still waits for the last checkpoint instead of exiting mid-way.
      worker.ref();
      worker.postMessage('stop');
      await done;
    },
  };
}
