import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../basics/log.js';

/**
 * Copies the SQLite write-ahead log back into the database file on a thread of its own, started
 * only while there is something to copy.
 *
 * Why a thread: SQLite checkpoints automatically on the connection that commits, every 1,000 WAL
 * pages, and a checkpoint writes and fsyncs the database file: 20–30 ms on a quiet disk, far more
 * on a busy one. better-sqlite3 runs on the event loop's thread, so each of those stalled
 * everything — acknowledgements, heartbeats, every turn. Under 500 busy sessions they came several
 * times a second and halved throughput. Here the bot's own connection never checkpoints
 * (`wal_autocheckpoint = 0`); a worker thread with a second connection runs a PASSIVE checkpoint
 * twice a second, which never blocks the writer (WAL lets both work at once). Commits themselves
 * stay durable against a killed process as before: they are in the WAL the moment they return.
 *
 * Why only sometimes: the thread is a V8 isolate of its own, ~10 MB of RSS (docs/performance.md,
 * "Round 3: start-up and idle memory"), paid by an idle bot that writes nothing. So it starts when
 * the WAL file reaches `startAtWalBytes` (SQLite's own threshold, 1,000 pages of 4 KiB) after it
 * last ran, and it ends itself once `idleStopMs` pass with no new frame in the WAL, after a
 * TRUNCATE checkpoint that leaves the WAL file empty. Until then the main thread only stats the
 * WAL file once a `pollMs`. A WAL below the threshold is as durable as a checkpointed one; SQLite
 * copies it into the database file when the last connection closes.
 *
 * If the worker cannot start or dies, the bot's connection goes back to checkpointing itself.
 */
export interface Checkpointer {
  /** Whether the checkpoint thread is running now (it comes and goes with the writes). */
  readonly running: boolean;
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  log?: Logger;
  /** Called (once) when the thread cannot run, so the caller turns the connection's own checkpoints back on. */
  fallback: () => void;
  everyMs?: number;
  startAtWalBytes?: number;
  idleStopMs?: number;
  pollMs?: number;
}

const EVERY_MS = 500;
const START_AT_WAL_BYTES = 1000 * 4096;
const IDLE_STOP_MS = 60_000;
const POLL_MS = 1_000;
/** Longest a stop() waits for the thread's last checkpoint before terminating it. */
const STOP_WAIT_MS = 5_000;

// The worker is plain CommonJS evaluated from this string, so it runs the same from the sources,
// the compiled bundle and the tests, with no file of its own to find on disk.
// `wal_checkpoint` answers [busy, frames in the WAL, frames copied]; the WAL is idle when every frame
// is copied and none came since the last tick. An idle thread truncates the WAL (copied already, so
// nothing is lost; with a zero busy timeout it gives up at once if a writer holds the lock, and then
// it stays) and ends: the main thread starts it again once the WAL file grows back to the threshold.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 0 });
let lastFrames = -1;
let quietSince = Date.now();
const checkpoint = (mode) => {
  try {
    return db.pragma('wal_checkpoint(' + mode + ')')[0];
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
    return undefined;
  }
};
const end = (message) => {
  clearInterval(timer);
  db.close();
  parentPort.postMessage(message);
  parentPort.close();
};
const timer = setInterval(() => {
  const r = checkpoint('PASSIVE');
  if (!r || r.busy || r.checkpointed !== r.log || r.log !== lastFrames) quietSince = Date.now();
  lastFrames = r ? r.log : -1;
  if (Date.now() - quietSince < workerData.idleStopMs) return;
  const t = checkpoint('TRUNCATE');
  if (t && !t.busy) end({ idle: true });
  else quietSince = Date.now();
}, workerData.everyMs);
parentPort.on('message', () => {
  checkpoint('PASSIVE');
  end({ stopped: true });
});
`;

/**
 * Watches the WAL of `file` and runs the checkpoint thread while the WAL needs it. `fallback()` is
 * called (once) when the thread cannot run.
 */
export function startCheckpointer(file: string, opts: CheckpointerOptions): Checkpointer {
  const everyMs = opts.everyMs ?? EVERY_MS;
  const startAt = opts.startAtWalBytes ?? START_AT_WAL_BYTES;
  const idleStopMs = opts.idleStopMs ?? IDLE_STOP_MS;
  const walFile = `${file}-wal`;
  let fellBack = false;
  let stopping = false;
  let worker: Worker | undefined;
  let exited: Promise<void> = Promise.resolve();
  let lastErrorLog = 0;

  const fallBack = (why: string) => {
    if (fellBack) return;
    fellBack = true;
    clearInterval(poll);
    opts.log?.warn({ file, why }, 'store: SQLite checkpoints run on the main thread again');
    opts.fallback();
  };

  const launch = () => {
    let w: Worker;
    try {
      const driver = createRequire(import.meta.url).resolve('better-sqlite3');
      w = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, everyMs, idleStopMs } });
    } catch (err) {
      fallBack((err as Error).message);
      return;
    }
    worker = w;
    w.unref();
    let endedIdle = false;
    w.on('message', (m: { error?: string; idle?: boolean }) => {
      if (m.idle) endedIdle = true;
      // A checkpoint can meet a busy lock now and then; it simply runs again on the next tick.
      if (m.error && Date.now() - lastErrorLog > 60_000) {
        lastErrorLog = Date.now();
        opts.log?.warn({ file, err: m.error }, 'store: a background checkpoint failed; it is retried');
      }
    });
    w.on('error', (err: Error) => fallBack(err.message));
    exited = new Promise<void>((resolve) => {
      w.once('exit', (code) => {
        if (worker === w) worker = undefined;
        if (!stopping && !endedIdle) fallBack(`the checkpoint thread exited (${code})`);
        resolve();
      });
    });
  };

  // Only while no thread runs: one stat of the WAL file a tick. A missing file is an empty WAL.
  let polling = false;
  const check = async () => {
    if (worker || polling || stopping || fellBack) return;
    polling = true;
    try {
      const size = await stat(walFile).then((s) => s.size, () => 0);
      if (size >= startAt && !worker && !stopping && !fellBack) launch();
    } finally {
      polling = false;
    }
  };
  const poll = setInterval(() => void check(), opts.pollMs ?? POLL_MS);
  poll.unref();
  void check();

  return {
    get running() {
      return worker !== undefined;
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      clearInterval(poll);
      const w = worker;
      if (!w) return;
      const done = Promise.race([
        exited,
        new Promise<void>((resolve) => setTimeout(() => void w.terminate().then(() => resolve(), () => resolve()), STOP_WAIT_MS).unref()),
      ]);
      // Unreferenced while it works, so it never keeps the bot alive; referenced now, so a process
      // with nothing else left to do still waits for the last checkpoint instead of exiting mid-way.
      w.ref();
      w.postMessage('stop');
      await done;
    },
  };
}
