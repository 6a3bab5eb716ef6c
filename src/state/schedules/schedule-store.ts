import type { Clock } from '../../basics/clock.js';
import type { DbOrTx, OpenedDatabase } from '../store/database.js';
import { lockOwner } from '../reminders/reminder-store.js';
import { dropWaiting, scheduleLane, scheduleWork, shortId, type TimerQueue } from '../timers/timer-work.js';
import type { ScheduleInput, SchedulePreview, ScheduleView, UserSchedules } from './user-schedules.js';
import { conversationKey, speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import { planClaim, type ClaimDecision, type ClaimRules } from './schedule-claim.js';
import { NO_SKIPS, SCHEDULE_LIMITS, ScheduleInputError, type RunOutcome, type ScheduleRecord, type ScheduleStatus } from './schedule-record.js';
import { describeSpec, isKnownZone, nextRunTimes, parseSchedule, type ScheduleSpec } from './schedule-spec.js';
import { describeCron } from './schedule-words.js';

/**
 * Scheduled tasks in the `hermes_schedule` table (db-schema.ts): the record as JSON, its status
 * and next due time in columns (the per-user listing and limit are indexed queries). Each due
 * time is one hermes_work row (`schedule:<id>@<due>`, due_at = that time, lane `schedule:<id>`):
 * - creating writes the schedule and the row of its first due time in one transaction;
 * - the run that the queue hands a row to claims that due time (claimRun): in one transaction it
 *   moves `next_due_at` on (a compare-and-set of the time it saw) and writes the row of the next
 *   due time, so exactly one row per schedule waits, and a due time runs once;
 * - cancelling (or stopping) sets the status and removes the waiting row in one transaction.
 */
export interface ScheduleSettings {
  minIntervalS: number;
  maxPerUser: number;
  defaultTimezone: string;
}

export interface ScheduleStore {
  forUser(speaker: Speaker, conversation: Conversation, replyTo?: string): UserSchedules;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /**
   * Claims the due time `seenDueAt` (the one its work row is for) at `now`: the decision (run it,
   * or skip it and the ones missed with it), or undefined when the schedule moved on meanwhile.
   */
  claimRun(id: string, seenDueAt: number, now: number, busy: boolean, rules: ClaimRules): Promise<ClaimDecision | undefined>;
  /** Ends the run `runId` (if it is still the record's run); the record after, or undefined. */
  endRun(id: string, runId: string, outcome: RunOutcome): Promise<ScheduleRecord | undefined>;
  /** Stops every active schedule of an owner (they may no longer use the bot); how many. */
  stopOwner(ownerKey: string, why: string): Promise<number>;
  /** Earliest next due time of an active schedule. */
  nextDueAt(): Promise<number | undefined>;
}

const parse = (record: string): ScheduleRecord => JSON.parse(record) as ScheduleRecord;

/** The row of a schedule (also used by the round-2 carry-over). */
export function scheduleRow(r: ScheduleRecord) {
  return { id: r.id, owner_key: r.ownerKey, status: r.status, next_due_at: r.status === 'active' ? (r.nextDueAt ?? null) : null, created_at: r.createdAt, record: JSON.stringify(r) };
}

export const PRIVATE_TASK = '(task hidden: set in a direct message; list there to see it)';

function limitReached(max: number): string {
  return (
    `This user already has ${max} active scheduled tasks, the most allowed (HERMES_MAX_SCHEDULES_PER_USER). ` +
    'Cancel one with cancel_scheduled_task first (list_scheduled_tasks shows them).'
  );
}

/** The words and next run times for a spec; shared by previews, views and the approval prompt. */
export function previewOf(spec: ScheduleSpec, fields: { name: string; task: string; schedule: string; timezone: string }, now: number): SchedulePreview {
  return { ...fields, words: describeSpec(spec, fields.timezone, describeCron), nextRuns: nextRunTimes(spec, fields.timezone, now, 3), seconds: spec.kind === 'cron' ? spec.withSeconds : spec.kind === 'every' && spec.unit === 'seconds' };
}

export function createScheduleStore(database: OpenedDatabase, clock: Clock, settings: ScheduleSettings, queue: TimerQueue): ScheduleStore {
  const { db } = database;

  async function load(id: string): Promise<ScheduleRecord | undefined> {
    const row = await db.selectFrom('hermes_schedule').select('record').where('id', '=', id).executeTakeFirst();
    return row ? parse(row.record) : undefined;
  }

  /**
   * Compare-and-set of one record in a transaction: `change` sees the current record and returns
   * the new one (or undefined to leave it); the write checks the status and next due time are
   * still what it read. `also` runs in the same transaction after the write.
   */
  function casRecord(id: string, change: (r: ScheduleRecord) => ScheduleRecord | undefined, also?: (tx: DbOrTx, before: ScheduleRecord, after: ScheduleRecord) => Promise<void>): Promise<ScheduleRecord | undefined> {
    return db.transaction().execute(async (tx) => {
      // PostgreSQL: the row is locked until commit, so a change racing this one (a cancel while a
      // run ends) waits and then sees this one's result, rather than making it miss.
      const read = tx.selectFrom('hermes_schedule').select(['status', 'next_due_at', 'record']).where('id', '=', id);
      const row = await (database.dialect === 'postgres' ? read.forUpdate() : read).executeTakeFirst();
      if (!row) return undefined;
      const before = parse(row.record);
      const after = change(before);
      if (!after) return undefined;
      const next = scheduleRow(after);
      let update = tx
        .updateTable('hermes_schedule')
        .set({ status: next.status, next_due_at: next.next_due_at, record: next.record })
        .where('id', '=', id)
        .where('status', '=', row.status);
      update = row.next_due_at === null ? update.where('next_due_at', 'is', null) : update.where('next_due_at', '=', row.next_due_at);
      const r = await update.executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return undefined;
      await also?.(tx, before, after);
      return after;
    });
  }

  /** The waiting row of a schedule that ended goes with it. */
  const dropNext = async (tx: DbOrTx, before: ScheduleRecord) => {
    if (before.nextDueAt !== undefined) await dropWaiting(tx, scheduleWork(before.id, before.nextDueAt).id);
  };

  function understand(input: ScheduleInput): { spec: ScheduleSpec; preview: SchedulePreview } {
    const task = input.task.trim();
    if (task === '') throw new ScheduleInputError('The task is empty; say what should be done at each run.');
    if (task.length > SCHEDULE_LIMITS.maxTaskChars) {
      throw new ScheduleInputError(`The task is ${task.length} characters; the limit is ${SCHEDULE_LIMITS.maxTaskChars}. Shorten it.`);
    }
    const timezone = input.timezone?.trim() || settings.defaultTimezone;
    if (!isKnownZone(timezone)) throw new ScheduleInputError(`"${timezone}" is not an IANA time zone; use a name like Europe/Berlin or America/New_York, or leave timezone out (default ${settings.defaultTimezone}).`);
    const now = clock.now();
    const parsed = parseSchedule(input.schedule, timezone, { now, minIntervalS: settings.minIntervalS });
    if (!parsed.ok) throw new ScheduleInputError(parsed.problem);
    const name = (input.name?.trim() || task.split('\n')[0] || task).slice(0, SCHEDULE_LIMITS.maxNameChars);
    return { spec: parsed.spec, preview: previewOf(parsed.spec, { name, task, schedule: input.schedule.trim(), timezone }, now) };
  }

  function viewOf(r: ScheduleRecord, here: Conversation | undefined): ScheduleView {
    const hidden = here !== undefined && r.conversation.isDm && conversationKey(r.conversation) !== conversationKey(here);
    const preview = previewOf(r.spec, { name: r.name, task: hidden ? PRIVATE_TASK : r.task, schedule: r.schedule, timezone: r.timezone }, clock.now());
    return {
      ...preview,
      nextRuns: r.status === 'active' && r.nextDueAt !== undefined ? [r.nextDueAt, ...nextRunTimes(r.spec, r.timezone, r.nextDueAt, 2)] : [],
      id: r.id,
      status: r.status,
      createdAt: r.createdAt,
      running: r.run !== undefined,
      ...(r.lastRun ? { lastRun: r.lastRun } : {}),
    };
  }

  async function activeOf(owner: string, tx: DbOrTx = db): Promise<ScheduleRecord[]> {
    const rows = await tx
      .selectFrom('hermes_schedule')
      .select('record')
      .where('owner_key', '=', owner)
      .where('status', '=', 'active')
      .orderBy('created_at')
      .orderBy('id')
      .limit(Math.max(1, settings.maxPerUser) + 50)
      .execute();
    return rows.map((row) => parse(row.record));
  }

  /** Ends an active schedule (cancelled or stopped), removing its waiting row in the same transaction. */
  const end = (id: string, ok: (r: ScheduleRecord) => boolean, status: ScheduleStatus, extra: Partial<ScheduleRecord> = {}) =>
    casRecord(id, (r) => (r.status === 'active' && ok(r) ? { ...r, ...extra, status, endedAt: clock.now() } : undefined), dropNext);

  function forUser(speaker: Speaker, conversation: Conversation, replyTo?: string): UserSchedules {
    const owner = speakerKey(speaker);
    return {
      async preview(input) {
        const { preview } = understand(input);
        if ((await activeOf(owner)).length >= settings.maxPerUser) throw new ScheduleInputError(limitReached(settings.maxPerUser));
        return preview;
      },

      async create(input) {
        const { spec, preview } = understand(input);
        const now = clock.now();
        const first = nextRunTimes(spec, preview.timezone, now, 1)[0];
        const made = await db.transaction().execute(async (tx) => {
          await lockOwner(tx, database.dialect, 'schedule', owner);
          const open = await tx
            .selectFrom('hermes_schedule')
            .select((e) => e.fn.countAll<number>().as('n'))
            .where('owner_key', '=', owner)
            .where('status', '=', 'active')
            .executeTakeFirstOrThrow();
          if (Number(open.n) >= settings.maxPerUser) throw new ScheduleInputError(limitReached(settings.maxPerUser));
          for (let attempt = 0; attempt < 8; attempt++) {
            const id = shortId('s', 5);
            const record: ScheduleRecord = {
              id, ownerKey: owner, speaker, conversation, ...(replyTo === undefined ? {} : { replyTo }),
              name: preview.name, task: preview.task, schedule: preview.schedule, spec, timezone: preview.timezone,
              createdAt: now, status: 'active', ...(first === undefined ? {} : { nextDueAt: first }), skipped: NO_SKIPS, runs: 0,
            };
            const r = await tx.insertInto('hermes_schedule').values(scheduleRow(record)).onConflict((c) => c.column('id').doNothing()).executeTakeFirst();
            if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) continue;
            if (first !== undefined) await queue.addIn(tx, scheduleWork(id, first));
            return record;
          }
          throw new Error('could not allocate a schedule id');
        });
        queue.wake(scheduleLane(made.id));
        return viewOf(made, conversation);
      },

      async list() {
        return (await activeOf(owner)).map((r) => viewOf(r, conversation));
      },

      async cancel(rawId) {
        const id = rawId.trim().toLowerCase();
        if (!/^[a-z0-9]{1,32}$/.test(id)) return false;
        return (await end(id, (r) => r.ownerKey === owner, 'cancelled')) !== undefined;
      },
    };
  }

  return {
    forUser,
    get: load,

    async claimRun(id, seenDueAt, now, busy, rules) {
      let decision: ClaimDecision | undefined;
      const after = await casRecord(
        id,
        (r) => {
          decision = r.nextDueAt === seenDueAt ? planClaim(r, now, busy, rules) : undefined;
          if (!decision) return undefined;
          // Skipped, and nothing left to run: the schedule is over.
          const rec = decision.record;
          return decision.kind === 'skip' && rec.nextDueAt === undefined && !rec.run ? { ...rec, status: 'finished', endedAt: now } : rec;
        },
        async (tx, _before, rec) => {
          if (rec.status === 'active' && rec.nextDueAt !== undefined) await queue.addIn(tx, scheduleWork(id, rec.nextDueAt));
        },
      );
      if (!after || !decision) return undefined;
      if (after.status === 'active' && after.nextDueAt !== undefined) queue.wake(scheduleLane(id));
      return { ...decision, record: after } as ClaimDecision;
    },

    endRun(id, runId, outcome) {
      const now = clock.now();
      return casRecord(id, (r) => {
        if (r.run?.runId !== runId) return undefined;
        const { run, ...rest } = r;
        const ended: ScheduleRecord = { ...rest, runs: r.runs + 1, lastRun: { dueAt: run.dueAt, endedAt: now, outcome } };
        return r.status === 'active' && r.nextDueAt === undefined ? { ...ended, status: 'finished', endedAt: now } : ended;
      });
    },

    async stopOwner(owner, why) {
      let n = 0;
      for (const r of await activeOf(owner)) {
        if (await end(r.id, () => true, 'stopped', { stoppedWhy: why })) n++;
      }
      return n;
    },

    async nextDueAt() {
      const row = await db.selectFrom('hermes_schedule').select('next_due_at').where('status', '=', 'active').where('next_due_at', 'is not', null).orderBy('next_due_at').limit(1).executeTakeFirst();
      return row?.next_due_at ?? undefined;
    },
  };
}
