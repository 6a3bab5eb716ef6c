import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import { createLocalWorkQueue } from '../../src/state/cluster/local-work-queue.js';
import { createPgWorkQueue } from '../../src/state/cluster/pg-work-queue.js';
import type { WorkQueue } from '../../src/state/cluster/work-queue.js';
import { createReminderRunner } from '../../src/state/reminders/reminder-delivery.js';
import { LIMITS } from '../../src/state/reminders/reminder-record.js';
import { createReminderStore } from '../../src/state/reminders/reminder-store.js';
import { createScheduleRunner, type ScheduledRun } from '../../src/state/schedules/schedule-runs.js';
import { createScheduleStore } from '../../src/state/schedules/schedule-store.js';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createPgPool } from '../../src/state/store/postgres-store.js';
import type { TimerJob } from '../../src/state/timers/timer-work.js';
import { alice, bob, channel } from '../reminders/fixtures.js';
import { engineWanted, freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * Reminders and schedules in their tables (hermes_reminder, hermes_schedule) and their firing as
 * rows of the one WorkQueue, on each engine: a SQLite file and the real PostgreSQL (this file is
 * in BOTH_ENGINES: the unit project runs SQLite, the e2e project PostgreSQL). Real clock, short
 * due times. On PostgreSQL, two instances (two queues with their own runners) share one schema.
 */
const pgUrl = await postgresForTests();
const log = pino({ level: 'silent' });

interface Place {
  database: OpenedDatabase;
  /** Another instance's handle on the same tables (PostgreSQL), or a restart (SQLite). */
  reopen(): Promise<OpenedDatabase>;
  queue(database: OpenedDatabase, name: string): WorkQueue<TimerJob>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});
const track = (db: OpenedDatabase) => {
  cleanups.push(() => db.close());
  return db;
};
const trackQueue = (q: WorkQueue<TimerJob>) => {
  cleanups.push(async () => {
    await q.close();
    await q.idle();
  });
  return q;
};

const engines: Array<{ name: string; open(): Promise<Place> }> = [
  {
    name: 'sqlite',
    async open() {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-timer-tables-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'hermes.sqlite');
      return {
        database: track(await openSqliteDatabase(file)),
        reopen: async () => track(await openSqliteDatabase(file)),
        queue: (database) => trackQueue(createLocalWorkQueue<TimerJob>({ database, clock: systemClock, log, maxConcurrent: () => 8 })),
      };
    },
  },
];
if (pgUrl) {
  engines.push({
    name: 'postgres',
    async open() {
      const schema = await freshSchema(pgUrl);
      const pool = createPgPool(schema.url, { max: 6 });
      cleanups.push(() => schema.drop());
      cleanups.push(() => pool.end());
      return {
        database: track(await openPostgresDatabase(pool)),
        reopen: async () => track(await openPostgresDatabase(pool)),
        queue: (database, name) =>
          trackQueue(createPgWorkQueue<TimerJob>({ database, url: schema.url, instanceId: name, clock: systemClock, log, maxConcurrent: () => 8, leaseMs: 1_000, pollMs: 100, settleMs: 0 })),
      };
    },
  });
}

async function until(pred: () => boolean | Promise<boolean>, ms = 40_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const settings = { minIntervalS: 1, maxPerUser: 3, defaultTimezone: 'UTC' };

describe.each(engines.filter((e) => engineWanted(e.name)))('reminder and schedule tables on $name', (engine) => {
  it('a reminder is its row and one work row, written together; a cancel removes both from the queue', async () => {
    const place = await engine.open();
    const queue = place.queue(place.database, 'a');
    const reminders = createReminderStore(place.database, systemClock, queue);
    const mine = reminders.forUser(alice, channel);
    const keep = await mine.create('keep', Date.now() + 60_000);
    const drop = await mine.create('drop', Date.now() + 60_000);
    const { db } = place.database;
    // Sorted here, not by the database: PostgreSQL's `order by` follows the cluster's collation,
    // which need not be the code-point order of a JavaScript comparison.
    const byId = (a: string[], b: string[]) => (a[0]! < b[0]! ? -1 : 1);
    expect((await db.selectFrom('hermes_reminder').select(['id', 'owner_key', 'status']).execute()).map((r) => [r.id, r.owner_key, r.status]).sort(byId)).toEqual(
      [[keep.id, 'slack:T1:UALICE', 'scheduled'], [drop.id, 'slack:T1:UALICE', 'scheduled']].sort(byId),
    );
    expect(await mine.cancel(drop.id)).toBe(true);
    expect((await db.selectFrom('hermes_work').select(['id', 'kind']).execute())).toEqual([{ id: `reminder:${keep.id}`, kind: 'reminder' }]);
    expect(await reminders.counts()).toEqual({ scheduled: 1, firing: 0 });
  });

  it('the per-user limit holds when creations race (one transaction each, owner by owner)', async () => {
    const place = await engine.open();
    const other = engine.name === 'postgres' ? await place.reopen() : place.database;
    const queue = place.queue(place.database, 'a');
    const a = createReminderStore(place.database, systemClock, queue).forUser(alice, channel);
    const b = createReminderStore(other, systemClock, queue).forUser(alice, channel);
    for (let i = 0; i < LIMITS.maxScheduledPerUser - 4; i++) await a.create(`r${i}`, Date.now() + 60_000);
    const raced = await Promise.allSettled([...Array(12)].map((_, i) => (i % 2 ? a : b).create(`race ${i}`, Date.now() + 60_000)));
    expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    expect(await a.list()).toHaveLength(LIMITS.maxScheduledPerUser);
    // Someone else is not held to alice's count.
    await expect(createReminderStore(place.database, systemClock, queue).forUser(bob, channel).create('bob', Date.now() + 60_000)).resolves.toBeDefined();
  });

  it('a due reminder fires once through the queue, and its work row is gone after', async () => {
    const place = await engine.open();
    const queue = place.queue(place.database, 'a');
    const reminders = createReminderStore(place.database, systemClock, queue);
    const delivered: string[] = [];
    const run = createReminderRunner({ reminders, clock: systemClock, log, deliver: async (r) => void delivered.push(r.id) });
    await queue.start(async (job, ctx) => (job.kind === 'reminder' ? run(job, ctx) : undefined));
    const v = await reminders.forUser(alice, channel).create('soon', Date.now() + 300);
    await until(async () => (await reminders.get(v.id))?.status === 'fired');
    await new Promise((r) => setTimeout(r, 300));
    expect(delivered).toEqual([v.id]);
    expect(await place.database.db.selectFrom('hermes_work').select('id').execute()).toEqual([]);
  });

  it('a run ending while its schedule is cancelled: both changes land, neither is lost', async () => {
    const place = await engine.open();
    // PostgreSQL: another instance's connection. SQLite: the one the process has (the file is one process's).
    const other = engine.name === 'postgres' ? await place.reopen() : place.database;
    const queue = place.queue(place.database, 'a');
    const rules = { graceMs: 60_000, lateAfterMs: 60_000, startedAt: Date.now() };
    const mine = createScheduleStore(place.database, systemClock, settings, queue);
    const theirs = createScheduleStore(other, systemClock, settings, queue);
    for (let i = 0; i < 8; i++) {
      const v = await mine.forUser(alice, channel).create({ task: `t${i}`, schedule: 'every 1 seconds' });
      const first = (await mine.get(v.id))!.nextDueAt!;
      const decision = await mine.claimRun(v.id, first, first + 10, false, rules);
      expect(decision?.kind).toBe('run');
      const runId = decision!.kind === 'run' ? decision!.run.runId : '';
      const [ended, cancelled] = await Promise.all([mine.endRun(v.id, runId, 'answered'), theirs.forUser(alice, channel).cancel(v.id)]);
      expect(ended).toBeDefined();
      expect(cancelled).toBe(true);
      expect(await mine.get(v.id)).toMatchObject({ status: 'cancelled', runs: 1, lastRun: { outcome: 'answered' } });
      expect((await mine.get(v.id))?.run).toBeUndefined();
    }
  });

  it('a schedule keeps exactly one waiting row, moved on by each run in the transaction that claims it', async () => {
    const place = await engine.open();
    const queue = place.queue(place.database, 'a');
    const schedules = createScheduleStore(place.database, systemClock, settings, queue);
    const runs: ScheduledRun[] = [];
    const run = createScheduleRunner({
      schedules, clock: systemClock, log, graceMs: 60_000, startedAt: Date.now(),
      run: async (r) => {
        runs.push(r);
        return 'answered';
      },
      notify: async () => undefined,
      waitingForApproval: async () => false,
    });
    await queue.start(async (job, ctx) => (job.kind === 'scheduled' ? run(job, ctx) : undefined));
    const v = await schedules.forUser(alice, channel).create({ task: 'tick', schedule: 'every 1 seconds' });
    await until(() => runs.length >= 2);
    await until(async () => (await schedules.get(v.id))?.runs === 2 || (await schedules.get(v.id))!.runs > 2);
    const waiting = await place.database.db.selectFrom('hermes_work').select(['id', 'due_at']).where('lane', '=', `schedule:${v.id}`).where('claimed_by', 'is', null).execute();
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.due_at).toBe((await schedules.get(v.id))!.nextDueAt);
    expect(await schedules.forUser(alice, channel).cancel(v.id)).toBe(true);
    const after = runs.length;
    await new Promise((r) => setTimeout(r, 1_500));
    expect(runs.length).toBeLessThanOrEqual(after + 1); // at most a run already claimed when it was cancelled
    expect(await place.database.db.selectFrom('hermes_work').select('id').where('claimed_by', 'is', null).execute()).toEqual([]);
  }, 60_000);
});

if (pgUrl && engineWanted('postgres')) describe('timers with two instances on PostgreSQL', () => {
  it('each due time of a schedule and each reminder fires once, whichever instance claims it', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    const instances = await Promise.all(['one', 'two'].map(async (name) => {
      const database = name === 'one' ? place.database : await place.reopen();
      const queue = place.queue(database, name);
      const schedules = createScheduleStore(database, systemClock, settings, queue);
      const reminders = createReminderStore(database, systemClock, queue);
      return { name, database, queue, schedules, reminders };
    }));
    const runs: Array<{ runId: string; by: string }> = [];
    const delivered: Array<{ id: string; by: string }> = [];
    for (const i of instances) {
      const schedule = createScheduleRunner({
        schedules: i.schedules, clock: systemClock, log, graceMs: 60_000, startedAt: Date.now(),
        run: async (r) => {
          runs.push({ runId: r.runId, by: i.name });
          // A run that takes a while widens the window for a second claim.
          await new Promise((res) => setTimeout(res, 50));
          return 'answered';
        },
        notify: async () => undefined,
        waitingForApproval: async () => false,
      });
      const reminder = createReminderRunner({ reminders: i.reminders, clock: systemClock, log, deliver: async (r) => void delivered.push({ id: r.id, by: i.name }) });
      await i.queue.start((job, ctx) => (job.kind === 'scheduled' ? schedule(job, ctx) : reminder(job, ctx)));
    }
    const [one, two] = instances;
    const s = await one!.schedules.forUser(alice, channel).create({ task: 'tick', schedule: 'every 1 seconds' });
    const ids: string[] = [];
    for (let k = 0; k < 10; k++) ids.push((await (k % 2 ? two! : one!).reminders.forUser(bob, channel).create(`r${k}`, Date.now() + 500 + k * 50)).id);

    await until(() => runs.length >= 5 && delivered.length >= 10);
    expect(await one!.schedules.forUser(alice, channel).cancel(s.id)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(runs.map((r) => r.runId)).toEqual([...new Set(runs.map((r) => r.runId))]);
    expect(runs.every((r) => r.runId.startsWith(`${s.id}@`))).toBe(true);
    expect(delivered.map((d) => d.id).sort()).toEqual([...ids].sort());
    const record = await two!.schedules.get(s.id);
    expect(record?.runs).toBe(runs.length);
  }, 60_000);
});
