import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ScheduleRecord } from '../../src/state/schedules/schedule-record.js';
import { createScheduleRunner, type ScheduledRun, type ScheduledRunEnd, type ScheduleRunsOptions } from '../../src/state/schedules/schedule-runs.js';
import { createScheduleStore, type ScheduleStore } from '../../src/state/schedules/schedule-store.js';
import { alice, bob, channel, memoryLogger, otherChannel } from '../reminders/fixtures.js';
import { advanceUntil as advanceBy, ManualClock, settle } from '../reminders/manual-clock.js';
import { timerDir, type TimerRig } from '../reminders/timer-rig.js';


const T0 = Date.UTC(2026, 10, 30, 12, 0);
const SEC = 1_000;
const MIN = 60 * SEC;
const settings = { minIntervalS: 300, maxPerUser: 3, defaultTimezone: 'UTC' };
const pause = (ms = 30) => new Promise((r) => setTimeout(r, ms));
/** The due time a run was claimed for (its runId is `<id>@<dueAt>`). */
const dueOf = (run: ScheduledRun) => new Date(Number(run.runId.split('@')[1])).toISOString();

describe('scheduled runs as rows of the WorkQueue (injected clock, SQLite)', () => {
  let tmp: Awaited<ReturnType<typeof timerDir>>;
  let rig: TimerRig;
  let clock: ManualClock;
  let schedules: ScheduleStore;
  let runs: Array<ScheduledRun & { at: number }>;
  let notices: Array<{ id: string; text: string }>;
  const rigs: TimerRig[] = [];

  beforeEach(async () => {
    tmp = await timerDir();
    clock = new ManualClock(T0);
    await reopen();
    runs = [];
    notices = [];
  });
  afterEach(async () => {
    for (const r of rigs.splice(0)) await r.close();
    await tmp.cleanup();
  });

  /** A (re)start over the same file: the tables and the queue, as the bot opens them. */
  async function reopen(): Promise<void> {
    rig = await tmp.open(clock);
    rigs.push(rig);
    schedules = createScheduleStore(rig.database, clock, settings, rig.queue);
  }

  function timer(overrides: Partial<ScheduleRunsOptions> = {}) {
    const log = process.env.TEST_LOG ? pino({ level: 'debug' }) : memoryLogger().log;
    const runner = createScheduleRunner({
      // Lateness is covered by the restart test; here a slow machine must not make runs "late".
      schedules, clock, log, graceMs: 60 * MIN, lateAfterMs: 30 * MIN, startedAt: clock.now(),
      run: async (run): Promise<ScheduledRunEnd> => {
        runs.push({ ...run, at: clock.now() });
        return 'answered';
      },
      notify: async (r: ScheduleRecord, text: string) => void notices.push({ id: r.id, text }),
      waitingForApproval: async () => false,
      ...overrides,
    });
    return {
      start: () => rig.start(async (job, ctx) => (job.kind === 'scheduled' ? runner(job, ctx) : undefined)),
      stop: () => rig.close(),
      /** Creating a schedule wakes the queue itself. */
      poke: () => undefined,
    };
  }

  /**
   * Small manual-clock steps; after each, the queue's idle() says when the claims and runs that
   * step set off are done (SQLite I/O on slow shared machines), at most 10 ms for a run held open.
   */
  const advanceUntil = (clock: ManualClock, done: () => boolean | Promise<boolean>, opts: { stepMs: number; maxSteps?: number }) =>
    advanceBy(clock, done, { stepMs: Math.min(opts.stepMs, 60_000), maxSteps: Math.max(opts.maxSteps ?? 200, 400), pauseMs: 10, settled: () => rig.queue.idle() });

  const hourly = (text = 'post the digest') => schedules.forUser(alice, channel, 'root-1').create({ task: text, schedule: '0 * * * *', name: 'Digest' });

  it('runs each due time once, as its creator, where it was made, with the ⏰ header', async () => {
    const t = timer();
    await t.start();
    const v = await hourly();
    t.poke();
    await advanceUntil(clock, () => runs.length >= 3, { stepMs: MIN, maxSteps: 240 });
    clock.advance(10 * MIN);
    await pause();
    expect(runs.map(dueOf)).toEqual(['2026-11-30T13:00:00.000Z', '2026-11-30T14:00:00.000Z', '2026-11-30T15:00:00.000Z']);
    for (const r of runs) expect(r.at).toBeGreaterThanOrEqual(Number(r.runId.split('@')[1])); // never early
    expect(runs[0]).toMatchObject({ scheduleId: v.id, speaker: alice, conversation: channel, replyTo: 'root-1', header: '⏰ Digest', runId: `${v.id}@${Date.UTC(2026, 10, 30, 13)}` });
    expect(runs[0]!.text).toContain('post the digest');
    await settle(async () => (await schedules.get(v.id))?.runs === 3);
  });

  // Two instances racing for one due time is PostgreSQL's case: test/timers/timer-tables.test.ts (its PostgreSQL half).

  it('a restart in between: the missed due time runs once at start, late, and older misses are mentioned', async () => {
    const v = await hourly();
    const first = timer();
    await first.start();
    await advanceUntil(clock, () => runs.length >= 1, { stepMs: 5 * MIN, maxSteps: 30 });
    await first.stop();

    clock.advance(2 * 60 * MIN + 20 * MIN); // down across 14:00 and 15:00; now 15:20
    await reopen();
    const second = timer({ startedAt: clock.now() });
    await second.start();
    await settle(() => runs.length >= 2);
    await pause();
    expect(runs).toHaveLength(2);
    expect(runs[1]!.runId).toBe(`${v.id}@${Date.UTC(2026, 10, 30, 15)}`);
    expect(runs[1]!.header).toBe('⏰ Digest (late: this run was due 2026-11-30 15:00 UTC, while I was not running; 1 earlier run skipped: I was not running at the time)');
    // The next one is on time and plain again.
    await advanceUntil(clock, () => runs.length >= 3, { stepMs: 5 * MIN, maxSteps: 30 });
    expect(runs[2]!.header).toBe('⏰ Digest');
  });

  it('misses older than the grace period are skipped, then mentioned in the next run', async () => {
    await hourly();
    clock.advance(5 * 60 * MIN + 2 * MIN); // nothing ran 13:00-17:00; now 17:02, 2 min late is within grace
    const t = timer({ graceMs: MIN, startedAt: clock.now() });
    await t.start();
    await pause();
    expect(runs).toEqual([]);
    await advanceUntil(clock, () => runs.length >= 1, { stepMs: 10 * SEC, maxSteps: 400 });
    expect(dueOf(runs[0]!)).toBe('2026-11-30T18:00:00.000Z');
    expect(runs[0]!.header).toBe('⏰ Digest (5 earlier runs skipped: I was not running at the time)');
  });

  it('a run still going when the next is due: that next run is skipped and mentioned', async () => {
    let release: (() => void) | undefined;
    const t = timer({
      run: async (run) => {
        runs.push({ ...run, at: clock.now() });
        if (runs.length === 1) await new Promise<void>((r) => (release = r));
        return 'answered';
      },
    });
    await t.start();
    await hourly();
    t.poke();
    await advanceUntil(clock, () => runs.length >= 1, { stepMs: 5 * MIN, maxSteps: 30 });
    await advanceUntil(clock, () => clock.now() >= Date.UTC(2026, 10, 30, 14, 10), { stepMs: 5 * MIN, maxSteps: 30 });
    expect(runs).toHaveLength(1);
    release!();
    await settle(async () => (await schedules.get(runs[0]!.scheduleId))?.runs === 1);
    await advanceUntil(clock, () => runs.length >= 2, { stepMs: MIN, maxSteps: 90 });
    expect(dueOf(runs[1]!)).toBe('2026-11-30T15:00:00.000Z');
    expect(runs[1]!.header).toBe('⏰ Digest (1 earlier run skipped: the run before was still going)');
  });

  it('an approval still waiting from the last run counts as still going', async () => {
    let waiting = true;
    const t = timer({ waitingForApproval: async () => waiting });
    const v = await hourly();
    await t.start();
    await advanceUntil(clock, async () => (await schedules.get(v.id))?.skipped.busy === 1, { stepMs: MIN, maxSteps: 90 });
    expect(runs).toEqual([]);
    waiting = false;
    await advanceUntil(clock, () => runs.length >= 1, { stepMs: 5 * MIN, maxSteps: 30 });
    expect(runs[0]!.header).toContain('1 earlier run skipped: the run before was still going');
    expect((await schedules.get(v.id))?.status).toBe('active');
  });

  it('a run whose process died is reported as interrupted once, never re-run', async () => {
    const v = await hourly();
    clock.advance(60 * MIN);
    // The old process claimed 13:00 (its row claimed once, never finished) and died mid-run.
    const claimed = await schedules.claimRun(v.id, Date.UTC(2026, 10, 30, 13), clock.now(), false, { graceMs: 60 * MIN, lateAfterMs: MIN, startedAt: T0 });
    expect(claimed?.kind).toBe('run');
    await rig.database.db.updateTable('hermes_work').set({ claimed_by: 'dead', claimed_until: clock.now() + 1e12, attempts: 1 }).where('id', '=', `schedule:${v.id}@${Date.UTC(2026, 10, 30, 13)}`).execute();
    await rig.close();
    clock.advance(30 * SEC);
    await reopen();
    const t = timer();
    await t.start();
    await settle(() => notices.length >= 1);
    expect(notices[0]!.text).toBe('⏰ Digest: the run due 2026-11-30 13:00 UTC was interrupted (I stopped while it ran) and did not finish. It is not repeated; the next run is on schedule.');
    await advanceUntil(clock, () => runs.length >= 1, { stepMs: MIN, maxSteps: 90 });
    expect(runs.map(dueOf)).toEqual(['2026-11-30T14:00:00.000Z']);
    expect(notices).toHaveLength(1);
    await settle(async () => (await schedules.get(v.id))?.lastRun?.outcome === 'answered');
  });

  it('a single run happens once and the schedule is finished; a cancelled one never runs', async () => {
    const mine = schedules.forUser(alice, channel);
    const once = await mine.create({ task: 'say hi', schedule: '2026-11-30T12:30:00Z' });
    const gone = await mine.create({ task: 'never', schedule: '*/5 * * * *' });
    expect(await mine.cancel(gone.id)).toBe(true);
    const t = timer();
    await t.start();
    await advanceUntil(clock, async () => (await schedules.get(once.id))?.status === 'finished', { stepMs: MIN, maxSteps: 60 });
    clock.advance(60 * MIN);
    await pause();
    expect(runs.map((r) => r.scheduleId)).toEqual([once.id]);
    expect(await mine.list()).toEqual([]);
  });

  it('a creator no longer allowed: the run does not happen and their schedules stop', async () => {
    const v = await hourly();
    await schedules.forUser(alice, otherChannel).create({ task: 'other', schedule: '0 9 * * *' });
    const t = timer({ allowed: (speaker) => speaker.userId !== alice.userId });
    await t.start();
    await advanceUntil(clock, () => notices.length >= 1, { stepMs: 5 * MIN, maxSteps: 30 });
    expect(runs).toEqual([]);
    expect(notices[0]).toMatchObject({ id: v.id, text: expect.stringContaining('stopped. The person who scheduled it may no longer use me') });
    await settle(async () => (await schedules.get(v.id))?.status === 'stopped');
    expect(await schedules.forUser(alice, channel).list()).toEqual([]);
  });

  it('only the creator can list or cancel; the per-user limit holds', async () => {
    const mine = schedules.forUser(alice, channel);
    // Listed in creation order (created_at; each creation is its own approved call, never the same millisecond).
    const a = await mine.create({ task: 'a', schedule: '0 9 * * *' });
    clock.advance(1);
    await mine.create({ task: 'b', schedule: '0 10 * * *' });
    clock.advance(1);
    await mine.create({ task: 'c', schedule: '0 11 * * *' });
    await expect(mine.create({ task: 'd', schedule: '0 12 * * *' })).rejects.toThrow('already has 3 active scheduled tasks, the most allowed (HERMES_MAX_SCHEDULES_PER_USER)');
    const bobs = schedules.forUser(bob, channel);
    expect(await bobs.list()).toEqual([]);
    expect(await bobs.cancel(a.id)).toBe(false);
    expect((await mine.list()).map((v) => v.task)).toEqual(['a', 'b', 'c']);
    expect(await mine.cancel(a.id.toUpperCase())).toBe(true);
    await expect(mine.create({ task: 'd', schedule: '0 12 * * *' })).resolves.toMatchObject({ task: 'd' });
  });

  it('a task set in a DM is not read out in a channel', async () => {
    const dm = { ...channel, channelId: 'D1', threadId: undefined, isDm: true };
    await schedules.forUser(alice, dm).create({ task: 'my secret plan', schedule: '0 9 * * *' });
    expect((await schedules.forUser(alice, dm).list())[0]!.task).toBe('my secret plan');
    expect((await schedules.forUser(alice, channel).list())[0]!.task).not.toContain('secret');
  });

  it('one waiting work row per schedule, due at its next time; a cancel takes it away', async () => {
    const v = await hourly();
    const rows = () => rig.database.db.selectFrom('hermes_work').select(['id', 'kind', 'lane', 'due_at']).execute();
    expect(await rows()).toEqual([{ id: `schedule:${v.id}@${Date.UTC(2026, 10, 30, 13)}`, kind: 'scheduled', lane: `schedule:${v.id}`, due_at: Date.UTC(2026, 10, 30, 13) }]);
    expect(await schedules.nextDueAt()).toBe(Date.UTC(2026, 10, 30, 13));
    const t = timer();
    await t.start();
    await advanceUntil(clock, () => runs.length >= 1, { stepMs: 5 * MIN, maxSteps: 30 });
    await settle(async () => (await schedules.get(v.id))?.runs === 1);
    // The run's own work row goes once its job has returned, a moment after the run is counted:
    // wait for the queue to be idle before reading the rows.
    await rig.queue.idle();
    expect((await rows()).map((r) => r.due_at)).toEqual([Date.UTC(2026, 10, 30, 14)]);
    expect(await schedules.forUser(alice, channel).cancel(v.id)).toBe(true);
    expect(await rows()).toEqual([]);
    expect(await schedules.nextDueAt()).toBeUndefined();
  });
});
