import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { Clock } from '../../src/basics/clock.js';
import { createLocalWorkQueue } from '../../src/state/cluster/local-work-queue.js';
import { openSqliteDatabase } from '../../src/state/store/database.js';
import { createInbox } from '../../src/gateway/inbox.js';

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

it("a lone instance's job end claims nothing when no row waits; a row written behind its back still runs at the timer's look", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-work-loop-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  cleanups.push(() => database.close());
  let claims = 0;
  database.stats.onQuery = (sql) => void (sql.includes('update hermes_work set claimed_by') && claims++);
  const time = movingClock(2_000_000);
  const queue = createLocalWorkQueue<string>({ database, clock: time.clock, log, maxConcurrent: () => 4 });
  cleanups.push(() => queue.close());
  const ran: string[] = [];
  await queue.start(async (job) => void ran.push(job));
  await settled();

  // One row at a time: the add's wake-up claims it, its end finds nothing counted and claims nothing.
  claims = 0;
  for (const id of ['a1', 'a2', 'a3']) {
    await queue.add({ id, kind: 'turn', lane: 'A', order: id, job: id });
    await settled();
  }
  expect(ran).toEqual(['a1', 'a2', 'a3']);
  expect(claims).toBe(3);

  // Two rows of a lane at once: the second waits behind the first and is claimed at its end.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const queue2Ran: string[] = [];
  await queue.close();
  const queue2 = createLocalWorkQueue<string>({ database, clock: time.clock, log, maxConcurrent: () => 4 });
  cleanups.push(() => queue2.close());
  await queue2.start(async (job) => {
    if (job === 'b1') await held;
    queue2Ran.push(job);
  });
  await settled();
  claims = 0;
  await queue2.add({ id: 'b1', kind: 'turn', lane: 'B', order: '1', job: 'b1' });
  await queue2.add({ id: 'b2', kind: 'turn', lane: 'B', order: '2', job: 'b2' });
  await settled();
  expect(queue2Ran).toEqual([]);
  release();
  await settled();
  expect(queue2Ran).toEqual(['b1', 'b2']);
  // b1's add, b2's add (found it behind b1), b1's end (b2); b2's end claimed nothing.
  expect(claims).toBe(3);

  // A row this process did not add (none should be): no wake-up finds it, the sleep timer's look does.
  await database.db
    .insertInto('hermes_work')
    .values({ id: 'c1', kind: 'turn', lane: 'C', order_key: '1', due_at: 0, payload: JSON.stringify('c1'), claimed_by: null, claimed_until: null, attempts: 0, created_at: 0 })
    .execute();
  await queue2.add({ id: 'd1', kind: 'turn', lane: 'D', order: '1', job: 'd1' });
  await settled();
  expect(queue2Ran).toEqual(['b1', 'b2', 'c1', 'd1']);
  await database.db
    .insertInto('hermes_work')
    .values({ id: 'c2', kind: 'turn', lane: 'C', order_key: '2', due_at: 0, payload: JSON.stringify('c2'), claimed_by: null, claimed_until: null, attempts: 0, created_at: 0 })
    .execute();
  await settled();
  expect(queue2Ran).not.toContain('c2');
  const waiting = time.pending();
  expect(waiting).toHaveLength(1);
  waiting[0]!.live = false;
  waiting[0]!.fn();
  await settled();
  expect(queue2Ran).toContain('c2');
});

it('an accepted message whose lane is free runs without a claim; one behind it in its lane waits for it, in order', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-work-loop-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  cleanups.push(() => database.close());
  let claims = 0;
  database.stats.onQuery = (sql) => void (sql.includes('update hermes_work set claimed_by') && claims++);
  const time = movingClock(3_000_000);
  const queue = createLocalWorkQueue<string>({ database, clock: time.clock, log, maxConcurrent: () => 4 });
  cleanups.push(() => queue.close());
  const started: Array<{ job: string; startedBefore: boolean }> = [];
  const gates = new Map<string, () => void>();
  await queue.start(async (job, ctx) => {
    started.push({ job, startedBefore: ctx.startedBefore });
    await new Promise<void>((r) => gates.set(job, r));
  });
  await settled();
  claims = 0;
  const inbox = createInbox(database, queue, () => time.clock.now());
  const turn = (id: string, lane: string, order: string) => ({ id, kind: 'turn' as const, lane, order, job: id });
  expect(await inbox.accept('slack', 'm1', turn('w1', 'L', '1'))).toBe(true);
  expect(await inbox.accept('slack', 'm2', turn('w2', 'L', '2'))).toBe(true);
  expect(await inbox.accept('slack', 'm3', turn('w3', 'M', '1'))).toBe(true);
  await settled();
  // w1 and w3 were written claimed and run; w2 waits behind w1 (no claim found it runnable).
  expect(started.map((s) => s.job)).toEqual(['w1', 'w3']);
  expect(started.every((s) => !s.startedBefore)).toBe(true);
  const rows = await database.db.selectFrom('hermes_work').select(['id', 'claimed_by', 'attempts']).orderBy('id').execute();
  expect(rows).toEqual([
    { id: 'w1', claimed_by: 'local', attempts: 1 },
    { id: 'w2', claimed_by: null, attempts: 0 },
    { id: 'w3', claimed_by: 'local', attempts: 1 },
  ]);
  // The wake-ups after w2's and w3's accepts look (w2 is counted waiting), and find nothing runnable.
  expect(claims).toBe(2);
  gates.get('w1')!();
  await settled();
  expect(started.map((s) => s.job)).toEqual(['w1', 'w3', 'w2']);
  gates.get('w2')!();
  gates.get('w3')!();
  await settled();
  expect(await database.db.selectFrom('hermes_work').select('id').execute()).toEqual([]);
  // A duplicate reserves nothing and runs nothing.
  expect(await inbox.accept('slack', 'm1', turn('w1b', 'N', '1'))).toBe(false);
  await settled();
  expect(started.map((s) => s.job)).toEqual(['w1', 'w3', 'w2']);
  expect(queue.active()).toBe(0);
});
