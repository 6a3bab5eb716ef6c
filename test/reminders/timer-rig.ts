import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type pino from 'pino';
import type { Clock } from '../../src/basics/clock.js';
import { createLocalWorkQueue } from '../../src/state/cluster/local-work-queue.js';
import type { WorkQueue } from '../../src/state/cluster/work-queue.js';
import { openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import type { TimerJob, TimerRunner } from '../../src/state/timers/timer-work.js';
import { memoryLogger } from './fixtures.js';

/**
 * The timer stack as the bot runs it on SQLite, without the gateway: the tables in a real SQLite
 * file and the local WorkQueue that claims reminder and schedule rows when they are due. `open()`
 * again after `close()` is a restart over the same file.
 */
export interface TimerRig {
  database: OpenedDatabase;
  queue: WorkQueue<TimerJob>;
  /** Starts claiming due rows with `run`. */
  start(run: TimerRunner): Promise<void>;
  /** Stops claiming (jobs in flight are aborted) and closes the database. */
  close(): Promise<void>;
}

export async function timerDir(): Promise<{ file: string; open: (clock: Clock, log?: pino.Logger) => Promise<TimerRig>; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-timers-'));
  const file = path.join(dir, 'hermes.sqlite');
  const open = async (clock: Clock, log: pino.Logger = memoryLogger().log): Promise<TimerRig> => {
    const database = await openSqliteDatabase(file);
    const queue = createLocalWorkQueue<TimerJob>({ database, clock, log, maxConcurrent: () => 20 });
    let closed = false;
    return {
      database,
      queue,
      start: (run) => queue.start(run),
      async close() {
        if (closed) return;
        closed = true;
        await queue.close();
        await queue.idle();
        await database.close();
      },
    };
  };
  return { file, open, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
