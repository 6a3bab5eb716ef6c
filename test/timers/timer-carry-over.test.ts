import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import type { Store } from '../../src/state/store/store.js';
import type { Reminder } from '../../src/state/reminders/reminder-record.js';
import { createReminderRunner } from '../../src/state/reminders/reminder-delivery.js';
import { createReminderStore } from '../../src/state/reminders/reminder-store.js';
import type { ScheduleRecord } from '../../src/state/schedules/schedule-record.js';
import { createScheduleRunner } from '../../src/state/schedules/schedule-runs.js';
import { createScheduleStore } from '../../src/state/schedules/schedule-store.js';
import { moveRound2Reminders, moveRound2Schedules } from '../../src/state/timers/timer-carry-over.js';
import { alice, channel, memoryLogger } from '../reminders/fixtures.js';
import { ManualClock, settle } from '../reminders/manual-clock.js';
import { timerDir, type TimerRig } from '../reminders/timer-rig.js';

/**
 * Round-2 reminder and schedule records in every state they could be left in (waiting, claimed
 * mid-delivery, finished, a run in progress) move into the tables with the work rows that carry
 * them on, once; the old records and their index keys are gone after.
 */
const T0 = Date.UTC(2026, 11, 1, 12, 0);
const MIN = 60_000;

const reminder = (id: string, status: Reminder['status'], dueAt: number): Reminder => ({
  id, ownerKey: 'slack:T1:UALICE', speaker: alice, conversation: channel, text: `text ${id}`, dueAt, createdAt: T0 - 60 * MIN, status,
  ...(status === 'firing' && { claimedAt: dueAt, attempts: 0 }),
});

const hourly = (id: string, extra: Partial<ScheduleRecord> = {}): ScheduleRecord => ({
  id, ownerKey: 'slack:T1:UALICE', speaker: alice, conversation: channel, name: 'Digest', task: 'post the digest', schedule: '0 * * * *',
  spec: { kind: 'cron', expression: '0 * * * *', withSeconds: false }, timezone: 'UTC', createdAt: T0 - 120 * MIN, status: 'active',
  nextDueAt: T0 + 60 * MIN, skipped: { down: 0, busy: 0 }, runs: 3, ...extra,
});

describe('round-2 reminders and schedules move into the tables', () => {
  let tmp: Awaited<ReturnType<typeof timerDir>>;
  let rig: TimerRig;
  let store: Store;
  let clock: ManualClock;

  beforeEach(async () => {
    tmp = await timerDir();
    clock = new ManualClock(T0);
    rig = await tmp.open(clock);
    store = createMemoryStore(clock);
  });
  afterEach(async () => {
    await rig.close();
    await tmp.cleanup();
  });

  it('moves each record once, with the work row that carries it on, and deletes the keys and indexes', async () => {
    await store.set('reminder:waits', reminder('waits', 'scheduled', T0 + 30 * MIN));
    await store.set('reminder:firing', reminder('firing', 'firing', T0 - 5 * MIN));
    await store.set('reminder:done', reminder('done', 'fired', T0 - 50 * MIN));
    await store.set('reminders:due', [['waits', T0 + 30 * MIN]]);
    await store.set('reminders:owner:slack%3AT1%3AUALICE', ['waits', 'firing']);
    await store.set('schedule:sidle', hourly('sidle'));
    const run = { runId: `srun@${T0}`, dueAt: T0, claimedAt: T0, renewedAt: T0, late: false, skipped: { down: 0, busy: 0 } };
    await store.set('schedule:srun', hourly('srun', { run }));
    await store.set('schedule:sgone', hourly('sgone', { status: 'cancelled', nextDueAt: undefined }));
    await store.set('schedules:due', [['sidle', T0 + 60 * MIN]]);
    await store.set('schedules:running', [['srun', T0]]);

    expect(await moveRound2Reminders(store, rig.database)).toBe(3);
    expect(await moveRound2Schedules(store, rig.database)).toBe(3);
    expect(await store.keysWithPrefix('reminder')).toEqual([]);
    expect(await store.keysWithPrefix('schedule')).toEqual([]);

    const { db } = rig.database;
    expect(await db.selectFrom('hermes_reminder').select(['id', 'status']).orderBy('id').execute()).toEqual([
      { id: 'done', status: 'fired' }, { id: 'firing', status: 'firing' }, { id: 'waits', status: 'scheduled' },
    ]);
    expect(await db.selectFrom('hermes_schedule').select(['id', 'status', 'next_due_at']).orderBy('id').execute()).toEqual([
      { id: 'sgone', status: 'cancelled', next_due_at: null }, { id: 'sidle', status: 'active', next_due_at: T0 + 60 * MIN }, { id: 'srun', status: 'active', next_due_at: T0 + 60 * MIN },
    ]);
    // Work: the waiting ones at their times; the claimed ones marked as started once.
    expect(await db.selectFrom('hermes_work').select(['id', 'kind', 'due_at', 'attempts']).orderBy('id').execute()).toEqual([
      { id: 'reminder:firing', kind: 'reminder', due_at: T0 - 5 * MIN, attempts: 1 },
      { id: 'reminder:waits', kind: 'reminder', due_at: T0 + 30 * MIN, attempts: 0 },
      { id: `schedule:sidle@${T0 + 60 * MIN}`, kind: 'scheduled', due_at: T0 + 60 * MIN, attempts: 0 },
      { id: `schedule:srun@${T0}`, kind: 'scheduled', due_at: T0, attempts: 1 },
      { id: `schedule:srun@${T0 + 60 * MIN}`, kind: 'scheduled', due_at: T0 + 60 * MIN, attempts: 0 },
    ]);
    // A second start finds nothing to move.
    expect(await moveRound2Reminders(store, rig.database)).toBe(0);
    expect(await moveRound2Schedules(store, rig.database)).toBe(0);
  });

  it('carries on from there: the claimed reminder is posted as a possible repeat, the cut-off run reported interrupted', async () => {
    await store.set('reminder:firing', reminder('firing', 'firing', T0 - 5 * MIN));
    const run = { runId: `srun@${T0}`, dueAt: T0, claimedAt: T0, renewedAt: T0, late: false, skipped: { down: 0, busy: 0 } };
    await store.set('schedule:srun', hourly('srun', { run }));
    await moveRound2Reminders(store, rig.database);
    await moveRound2Schedules(store, rig.database);

    const reminders = createReminderStore(rig.database, clock, rig.queue);
    const schedules = createScheduleStore(rig.database, clock, { minIntervalS: 300, maxPerUser: 5, defaultTimezone: 'UTC' }, rig.queue);
    const posted: Array<{ id: string; maybeRepeat: boolean }> = [];
    const notices: string[] = [];
    const log = memoryLogger().log;
    const remind = createReminderRunner({ reminders, clock, log, deliver: async (r, info) => void posted.push({ id: r.id, maybeRepeat: info.maybeRepeat }) });
    const scheduled = createScheduleRunner({
      schedules, clock, log, graceMs: 60 * MIN, startedAt: T0,
      run: async () => 'answered', notify: async (_r, text) => void notices.push(text), waitingForApproval: async () => false,
    });
    await rig.start((job, ctx) => (job.kind === 'reminder' ? remind(job, ctx) : scheduled(job, ctx)));
    await settle(() => posted.length === 1 && notices.length === 1);
    expect(posted).toEqual([{ id: 'firing', maybeRepeat: true }]);
    expect(notices[0]).toContain('was interrupted');
    await settle(async () => (await schedules.get('srun'))?.lastRun?.outcome === 'interrupted');
    expect((await schedules.get('srun'))?.run).toBeUndefined();
  });
});
