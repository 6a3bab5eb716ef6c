import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatReminder } from '../../src/state/reminders/format-reminder.js';
import type { Reminder } from '../../src/state/reminders/reminder-record.js';
import { createReminderStore, type ReminderStore } from '../../src/state/reminders/reminder-store.js';
import { createReminderRunner, type DeliveryInfo, type ReminderDeliveryOptions } from '../../src/state/reminders/reminder-delivery.js';
import type { Speaker } from '../../src/basics/types.js';
import { alice, bob, channel, memoryLogger, otherChannel } from './fixtures.js';
import { advanceUntil, ManualClock, settle } from './manual-clock.js';
import { timerDir, type TimerRig } from './timer-rig.js';

const T0 = Date.UTC(2026, 10, 29, 12, 0);
const SEC = 1_000;
const MIN = 60 * SEC;

interface Delivered {
  id: string;
  at: number;
  text: string;
  conversation: Reminder['conversation'];
  info: DeliveryInfo;
  posted: string;
}

describe('reminders as rows of the WorkQueue (injected clock, SQLite)', () => {
  let tmp: Awaited<ReturnType<typeof timerDir>>;
  let rig: TimerRig;
  let clock: ManualClock;
  let reminders: ReminderStore;
  let delivered: Delivered[];
  const rigs: TimerRig[] = [];

  beforeEach(async () => {
    tmp = await timerDir();
    clock = new ManualClock(T0);
    rig = await tmp.open(clock);
    rigs.push(rig);
    reminders = createReminderStore(rig.database, clock, rig.queue);
    delivered = [];
  });
  afterEach(async () => {
    for (const r of rigs.splice(0)) await r.close();
    await tmp.cleanup();
  });

  function recordingDeliver(c = clock) {
    return async (r: Reminder, info: DeliveryInfo) => {
      delivered.push({ id: r.id, at: c.now(), text: r.text, conversation: r.conversation, info, posted: formatReminder(r, `<@${r.speaker.userId}>`, info.late, c.now()) });
    };
  }

  /** The work queue of `on` running reminder rows; `start()` begins claiming, `stop()` ends it. */
  function scheduler(overrides: Partial<ReminderDeliveryOptions> = {}, on = rig) {
    const options = { reminders, clock, deliver: recordingDeliver(), log: memoryLogger().log, ...overrides };
    const run = createReminderRunner(options);
    return {
      start: () => on.start(async (job, ctx) => (job.kind === 'reminder' ? run(job, ctx) : undefined)),
      stop: () => void on.queue.close(),
      /** Creating a reminder wakes the queue itself: nothing to poke any more. */
      poke: () => undefined,
    };
  }

  const countOf = (id: string) => delivered.filter((d) => d.id === id).length;

  it('fires once, at its time, in the conversation it was created in, with its text', async () => {
    const s = scheduler();
    await s.start();
    const v = await reminders.forUser(alice, channel).create('water the plants', T0 + 10 * MIN);
    s.poke();

    await advanceUntil(clock, () => clock.now() >= T0 + 9 * MIN + 30 * SEC, { stepMs: 30 * SEC, maxSteps: 40 });
    expect(delivered).toEqual([]);
    await advanceUntil(clock, () => delivered.length > 0, { stepMs: SEC, maxSteps: 45 });
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ id: v.id, text: 'water the plants', conversation: channel, info: { late: false, maybeRepeat: false, attempt: 1 } });
    expect(delivered[0]!.at).toBeGreaterThanOrEqual(T0 + 10 * MIN);
    expect(delivered[0]!.posted).toBe('⏰ <@UALICE> Reminder: water the plants');

    await settle(async () => (await reminders.get(v.id))?.status === 'fired');
    clock.advance(10 * MIN);
    await new Promise((r) => setTimeout(r, 50));
    expect(countOf(v.id)).toBe(1);
    expect(await reminders.get(v.id)).toMatchObject({ status: 'fired', late: false });
  });

  it('does not fire a cancelled reminder', async () => {
    const s = scheduler();
    await s.start();
    const mine = reminders.forUser(alice, channel);
    const keep = await mine.create('keep', T0 + MIN);
    const drop = await mine.create('drop', T0 + MIN);
    expect(await mine.cancel(drop.id)).toBe(true);
    s.poke();
    await advanceUntil(clock, () => delivered.length > 0, { stepMs: 10 * SEC });
    clock.advance(MIN);
    await new Promise((r) => setTimeout(r, 50));
    expect(delivered.map((d) => d.id)).toEqual([keep.id]);
  });

  it('fires a reminder that fell due during a restart once, at start, marked late', async () => {
    const first = scheduler();
    await first.start();
    const v = await reminders.forUser(bob, otherChannel).create('stand-up', T0 + 5 * MIN);
    first.poke();
    await advanceUntil(clock, () => clock.now() >= T0 + 4 * MIN, { stepMs: 30 * SEC });
    await rig.close();

    clock.advance(10 * MIN); // the bot is down while the reminder falls due
    expect(delivered).toEqual([]);

    rig = await tmp.open(clock);
    rigs.push(rig);
    reminders = createReminderStore(rig.database, clock, rig.queue);
    const second = scheduler();
    await second.start();
    await settle(() => delivered.length > 0);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ id: v.id, conversation: otherChannel, info: { late: true } });
    expect(delivered[0]!.posted).toBe('⏰ <@UBOB> Reminder: stand-up (late: was due 12:05 UTC)');
    await settle(async () => (await reminders.get(v.id))?.status === 'fired');
    expect(await reminders.get(v.id)).toMatchObject({ late: true, firedAt: T0 + 14 * MIN });

    // And a third start over the same file does not fire it again.
    await rig.close();
    rig = await tmp.open(clock);
    rigs.push(rig);
    reminders = createReminderStore(rig.database, clock, rig.queue);
    const third = scheduler();
    await third.start();
    await advanceUntil(clock, () => clock.now() >= T0 + 20 * MIN, { stepMs: 30 * SEC });
    expect(countOf(v.id)).toBe(1);
  });

  // Two instances racing for one reminder is PostgreSQL's case (one process owns a SQLite file):
  // test/timers/timer-tables.test.ts (its PostgreSQL half).

  it('100 reminders within one minute each fire exactly once, on time', async () => {
    const users: Speaker[] = [0, 1, 2, 3].map((n) => ({ ...alice, userId: `U${n}` }));
    const due = new Map<string, number>();
    for (let i = 0; i < 100; i++) {
      const at = T0 + MIN + Math.floor((i * 60 * SEC) / 100);
      const v = await reminders.forUser(users[i % 4]!, channel).create(`task ${i}`, at);
      due.set(v.id, at);
    }
    const s = scheduler();
    await s.start();
    clock.advance(MIN - 2 * SEC);
    await settle(() => clock.pendingTimers() > 0);
    expect(delivered).toEqual([]);
    // Second by second: before the clock moves on, everything due so far must have fired.
    for (let t = 0; t <= 61; t++) {
      clock.advance(SEC);
      const dueNow = [...due.values()].filter((at) => at <= clock.now()).length;
      await settle(() => delivered.length >= dueNow);
    }
    clock.advance(5 * MIN);
    await new Promise((r) => setTimeout(r, 100));

    expect(delivered).toHaveLength(100);
    expect(new Set(delivered.map((d) => d.id)).size).toBe(100);
    for (const d of delivered) {
      expect(d.at).toBeGreaterThanOrEqual(due.get(d.id)!);
      expect(d.at - due.get(d.id)!).toBeLessThanOrEqual(SEC);
      expect(d.info.late).toBe(false);
    }
  });

  it('a reminder left "firing" by a crash is redelivered once at the next start, marked as a possible repeat', async () => {
    const v = await reminders.forUser(alice, channel).create('maybe twice', T0 + MIN);
    clock.advance(MIN);
    // What kill -9 mid-delivery leaves: the record claimed, its work row claimed once and never finished.
    expect(await reminders.claim(v.id)).toBeDefined();
    await rig.database.db.updateTable('hermes_work').set({ claimed_by: 'dead', claimed_until: clock.now() + 1e12, attempts: 1 }).where('id', '=', `reminder:${v.id}`).execute();
    await rig.close();
    clock.advance(10 * SEC);

    rig = await tmp.open(clock);
    rigs.push(rig);
    reminders = createReminderStore(rig.database, clock, rig.queue);
    const { log, lines } = memoryLogger();
    const s = scheduler({ log });
    await s.start();
    await settle(() => delivered.length > 0);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ id: v.id, info: { maybeRepeat: true } });
    expect(delivered[0]!.posted).toContain('(may be a repeat)');
    await settle(async () => (await reminders.get(v.id))?.status === 'fired');
    expect(lines().some((l) => String(l.msg).includes('claimed but never finished'))).toBe(true);

    clock.advance(5 * MIN);
    await new Promise((r) => setTimeout(r, 50));
    expect(countOf(v.id)).toBe(1);
    expect(await rig.database.db.selectFrom('hermes_work').select('id').execute()).toEqual([]);
  });

  it('retries a failing delivery a bounded number of times, then marks it failed', async () => {
    const v = await reminders.forUser(alice, channel).create('unlucky', T0 + MIN);
    let attempts = 0;
    const { log, lines } = memoryLogger();
    const s = scheduler({
      log,
      retryDelaysMs: [SEC, 5 * SEC],
      // Throws synchronously (not a rejected promise): still just a failed attempt.
      deliver: () => {
        attempts++;
        throw new Error('channel_not_found');
      },
    });
    await s.start();
    await advanceUntil(clock, async () => (await reminders.get(v.id))?.status === 'failed', { stepMs: SEC, maxSteps: 100 });
    expect(attempts).toBe(3);
    expect(await reminders.get(v.id)).toMatchObject({ status: 'failed', lastError: 'channel_not_found' });
    await settle(() => lines().some((l) => l.msg === 'reminder delivery failed; giving up'));

    clock.advance(30 * MIN);
    await new Promise((r) => setTimeout(r, 50));
    expect(attempts).toBe(3);
  });

  it('a retry after a transient error delivers once; after a timeout it is flagged as a possible repeat', async () => {
    const flaky = await reminders.forUser(alice, channel).create('flaky', T0 + MIN);
    const hangs = await reminders.forUser(bob, channel).create('hangs', T0 + MIN);
    const calls: Array<{ id: string; info: DeliveryInfo }> = [];
    const s = scheduler({
      retryDelaysMs: [2 * SEC],
      deliverTimeoutMs: 5 * SEC,
      deliver: (r, info) => {
        calls.push({ id: r.id, info });
        if (info.attempt === 1 && r.id === flaky.id) return Promise.reject(new Error('ratelimited'));
        if (info.attempt === 1 && r.id === hangs.id) return new Promise<void>(() => {});
        return Promise.resolve();
      },
    });
    await s.start();
    await advanceUntil(
      clock,
      async () => (await reminders.get(flaky.id))?.status === 'fired' && (await reminders.get(hangs.id))?.status === 'fired',
      { stepMs: SEC, maxSteps: 100 },
    );
    expect(calls.filter((c) => c.id === flaky.id).map((c) => c.info.maybeRepeat)).toEqual([false, false]);
    expect(calls.filter((c) => c.id === hangs.id).map((c) => c.info.maybeRepeat)).toEqual([false, true]);
  });
});
