import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { Clock } from '../../src/basics/clock.js';
import { createLocalWorkQueue } from '../../src/state/cluster/local-work-queue.js';
import { openSqliteDatabase } from '../../src/state/store/database.js';

/**
 * When the work loop wakes for a row due later, on a clock that moves while it works (every
 * reading is a millisecond after the one before, as on a busy machine between two queries). The
 * timers are the test's: it fires them itself, so the check does not depend on the machine's load.
 */
const log = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

function movingClock(start: number) {
  let t = start;
  const timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  const clock: Clock = {
    now: () => t++,
    setTimer(fn, ms) {
      const timer = { at: t + ms, fn, live: true };
      timers.push(timer);
      return () => void (timer.live = false);
    },
  };
  return {
    clock,
    set: (at: number) => void (t = at),
    /** The one timer the loop has set (it keeps at most one besides none). */
    pending: () => timers.filter((x) => x.live),
  };
}

const settled = () => new Promise((r) => setTimeout(r, 50));

it('a row that comes due between a look for work and the look for the next wake-up runs then, not a minute later', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-work-loop-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  cleanups.push(() => database.close());
  const time = movingClock(1_000_000);
  const queue = createLocalWorkQueue<string>({ database, clock: time.clock, log, maxConcurrent: () => 2 });
  cleanups.push(() => queue.close());
  const ran: string[] = [];
  await queue.start(async (job) => void ran.push(job));
  await settled();

  // The timer fires a few milliseconds before the row is due by the clock the loop reads (timers
  // and Date.now() are different clocks, and a loaded machine reads slowly): at some of these the
  // claim finds nothing and by a later reading the row is due.
  for (const early of [1, 2, 3, 4, 5]) {
    const id = `r${early}`;
    const due = 1_000_000 + early * 10_000;
    await queue.add({ id, kind: 'reminder', lane: `reminder:${id}`, order: '0', dueAt: due, job: id });
    await settled();
    const [waiting] = time.pending();
    // Set for the due time (give or take the readings taken meanwhile).
    expect(Math.abs(waiting!.at - due)).toBeLessThan(10);
    time.set(due - early);
    waiting!.live = false;
    waiting!.fn();
    await settled();
    if (!ran.includes(id)) {
      // Not claimed yet: the loop must look again within a moment, not sleep its longest wait (a minute).
      const next = time.pending();
      expect(next).toHaveLength(1);
      expect(next[0]!.at - due, `${early} ms early`).toBeLessThan(1_000);
      next[0]!.live = false;
      time.set(next[0]!.at);
      next[0]!.fn();
      await settled();
    }
    expect(ran).toContain(id);
  }
});
