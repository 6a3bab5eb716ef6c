import { sql } from 'kysely';
import type { Clock } from '../../basics/clock.js';
import type { DbOrTx, OpenedDatabase } from '../store/database.js';
import { dropWaiting, reminderLane, reminderWork, shortId, type TimerQueue } from '../timers/timer-work.js';
import type { ReminderView, UserReminders } from './user-reminders.js';
import { conversationKey, speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import { LIMITS, ReminderInputError, type Reminder, type ReminderStatus } from './reminder-record.js';

/**
 * Reminders in the `hermes_reminder` table (db-schema.ts): one row each, its status and due time
 * in columns, the record as JSON. Creating one writes the row and its work row
 * (`reminder:<id>`, due at the reminder's time) in one transaction; cancelling sets the status
 * and removes the waiting work row in one transaction. Firing is the WorkQueue's claim of that row
 * (reminder-delivery.ts), so no list of due reminders exists to keep in step.
 *
 * Every status change is a compare-and-set on the status column: of a claim and a cancel racing,
 * exactly one wins.
 */
export interface ReminderStore {
  /** The speaker's view: list and cancel never see anyone else's reminders. */
  forUser(speaker: Speaker, conversation: Conversation, replyTo?: string): UserReminders;
  get(id: string): Promise<Reminder | undefined>;
  /** Scheduled reminders with dueAt <= now, earliest first, at most `limit` (operators, tests). */
  due(now: number, limit?: number): Promise<Reminder[]>;
  /** scheduled → firing; the record after, for exactly one caller (undefined for the others). */
  claim(id: string): Promise<Reminder | undefined>;
  /** A delivery whose runner died (still `firing`): claimed again and marked maybeRepeat; the record after. */
  takeOver(id: string): Promise<Reminder | undefined>;
  /** Counts a delivery attempt (and keeps its last error for operators). */
  recordAttempt(id: string, error?: string): Promise<void>;
  markFired(id: string, late: boolean): Promise<void>;
  markFailed(id: string, error: string): Promise<void>;
  /** Earliest dueAt among scheduled reminders. */
  nextDueAt(): Promise<number | undefined>;
  /** Upcoming reminders and deliveries in progress, for status output. */
  counts(): Promise<{ scheduled: number; firing: number }>;
  /** Deletes reminders that ended (fired, cancelled, failed) and were due before `before`; how many. */
  prune(before: number): Promise<number>;
}

const OPEN: ReminderStatus[] = ['scheduled', 'firing'];
const ENDED: ReminderStatus[] = ['fired', 'cancelled', 'failed', 'unknown'];

export const PRIVATE_TEXT = '(text hidden: set in a direct message; list there to see it)';

function toView(r: Reminder): ReminderView {
  const status = r.status === 'cancelled' ? 'cancelled' : r.status === 'scheduled' || r.status === 'firing' ? 'scheduled' : 'fired';
  return { id: r.id, text: r.text, dueAt: r.dueAt, createdAt: r.createdAt, status };
}

/** A reminder set in a DM must not have its text read out in a channel others can see. */
function viewFrom(r: Reminder, here: Conversation): ReminderView {
  const view = toView(r);
  return r.conversation.isDm && conversationKey(r.conversation) !== conversationKey(here) ? { ...view, text: PRIVATE_TEXT } : view;
}

const parse = (record: string): Reminder => JSON.parse(record) as Reminder;

/** The row of a reminder (also used by the round-2 carry-over). */
export function reminderRow(r: Reminder) {
  return { id: r.id, owner_key: r.ownerKey, status: r.status, due_at: r.dueAt, created_at: r.createdAt, record: JSON.stringify(r) };
}

/** On PostgreSQL, creations of one owner take turns (the per-user limit counts, then inserts). */
export async function lockOwner(tx: DbOrTx, dialect: OpenedDatabase['dialect'], scope: string, owner: string): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`${scope}:${owner}`}))`.execute(tx);
}

export function createReminderStore(database: OpenedDatabase, clock: Clock, queue: TimerQueue): ReminderStore {
  const { db } = database;

  async function load(id: string): Promise<Reminder | undefined> {
    const row = await db.selectFrom('hermes_reminder').select('record').where('id', '=', id).executeTakeFirst();
    return row ? parse(row.record) : undefined;
  }

  /**
   * Compare-and-set: applies `patch` when the status is one of `from`; the record after, or
   * undefined. `also` runs in the same transaction when the change applied.
   */
  function change(id: string, from: ReminderStatus[], patch: (r: Reminder) => Reminder, also?: (tx: DbOrTx) => Promise<void>): Promise<Reminder | undefined> {
    return db.transaction().execute(async (tx) => {
      // PostgreSQL: locked until commit, so racing changes apply one after the other, none lost.
      const read = tx.selectFrom('hermes_reminder').select(['status', 'record']).where('id', '=', id);
      const row = await (database.dialect === 'postgres' ? read.forUpdate() : read).executeTakeFirst();
      if (!row || !from.includes(row.status as ReminderStatus)) return undefined;
      const next = patch(parse(row.record));
      const r = await tx
        .updateTable('hermes_reminder')
        .set({ status: next.status, record: JSON.stringify(next) })
        .where('id', '=', id)
        .where('status', '=', row.status)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return undefined;
      await also?.(tx);
      return next;
    });
  }

  function forUser(speaker: Speaker, conversation: Conversation, replyTo?: string): UserReminders {
    const owner = speakerKey(speaker);

    return {
      async create(rawText, dueAt) {
        const text = rawText.trim();
        if (text === '') throw new ReminderInputError('The reminder text is empty; say what to remind about.');
        if (text.length > LIMITS.maxTextChars) {
          throw new ReminderInputError(`The reminder text is ${text.length} characters; the limit is ${LIMITS.maxTextChars}. Shorten it.`);
        }
        const now = clock.now();
        if (!Number.isFinite(dueAt) || dueAt <= now) {
          throw new ReminderInputError(`The time is not in the future; the current time is ${new Date(now).toISOString()}.`);
        }
        if (dueAt - now > LIMITS.maxAheadMs) {
          throw new ReminderInputError(`Reminders can be set at most one year ahead (until ${new Date(now + LIMITS.maxAheadMs).toISOString()}).`);
        }
        const base = { ownerKey: owner, speaker, conversation, text, dueAt, createdAt: now, status: 'scheduled' as const };
        const made = await db.transaction().execute(async (tx) => {
          await lockOwner(tx, database.dialect, 'reminder', owner);
          const open = await tx
            .selectFrom('hermes_reminder')
            .select((e) => e.fn.countAll<number>().as('n'))
            .where('owner_key', '=', owner)
            .where('status', 'in', OPEN)
            .executeTakeFirstOrThrow();
          if (Number(open.n) >= LIMITS.maxScheduledPerUser) {
            throw new ReminderInputError(
              `This user already has ${LIMITS.maxScheduledPerUser} scheduled reminders, the limit. Cancel one (list_reminders shows them) before adding another.`,
            );
          }
          for (let attempt = 0; attempt < 8; attempt++) {
            const id = shortId('', 6);
            const record: Reminder = replyTo === undefined ? { id, ...base } : { id, ...base, replyTo };
            const r = await tx.insertInto('hermes_reminder').values(reminderRow(record)).onConflict((c) => c.column('id').doNothing()).executeTakeFirst();
            if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) continue;
            await queue.addIn(tx, reminderWork(id, dueAt));
            return record;
          }
          throw new Error('could not allocate a reminder id');
        });
        queue.wake(reminderLane(made.id));
        return toView(made);
      },

      async list() {
        const rows = await db
          .selectFrom('hermes_reminder')
          .select('record')
          .where('owner_key', '=', owner)
          .where('status', 'in', OPEN)
          .orderBy('due_at')
          .orderBy('id')
          .limit(LIMITS.maxScheduledPerUser + 1)
          .execute();
        return rows.map((row) => viewFrom(parse(row.record), conversation));
      },

      async cancel(rawId) {
        const id = rawId.trim().toLowerCase();
        if (!/^[a-z0-9]{1,32}$/.test(id)) return false;
        const current = await load(id);
        // Someone else's id answers exactly like a missing one: no probing of other users' reminders.
        if (!current || current.ownerKey !== owner) return false;
        const done = await change(id, ['scheduled'], (r) => ({ ...r, status: 'cancelled', cancelledAt: clock.now() }), (tx) => dropWaiting(tx, reminderWork(id, current.dueAt).id));
        return done !== undefined;
      },
    };
  }

  return {
    forUser,
    get: load,

    async due(now, limit = 50) {
      const rows = await db
        .selectFrom('hermes_reminder')
        .select('record')
        .where('status', '=', 'scheduled')
        .where('due_at', '<=', now)
        .orderBy('due_at')
        .orderBy('id')
        .limit(Math.max(0, limit))
        .execute();
      return rows.map((row) => parse(row.record));
    },

    claim: (id) => change(id, ['scheduled'], (r) => ({ ...r, status: 'firing', claimedAt: clock.now(), attempts: 0 })),

    takeOver: (id) => change(id, ['firing'], (r) => ({ ...r, claimedAt: clock.now(), maybeRepeat: true })),

    async recordAttempt(id, error) {
      await change(id, ['firing'], (r) => ({ ...r, claimedAt: clock.now(), attempts: (r.attempts ?? 0) + 1, ...(error === undefined ? {} : { lastError: error.slice(0, 500) }) }));
    },

    async markFired(id, late) {
      await change(id, ['firing'], (r) => ({ ...r, status: 'fired', firedAt: clock.now(), late }));
    },

    async markFailed(id, error) {
      await change(id, ['firing'], (r) => ({ ...r, status: 'failed', lastError: error.slice(0, 500) }));
    },

    async nextDueAt() {
      const row = await db.selectFrom('hermes_reminder').select('due_at').where('status', '=', 'scheduled').orderBy('due_at').limit(1).executeTakeFirst();
      return row?.due_at;
    },

    async counts() {
      const rows = await db
        .selectFrom('hermes_reminder')
        .select(['status', (e) => e.fn.countAll<number>().as('n')])
        .where('status', 'in', OPEN)
        .groupBy('status')
        .execute();
      const n = (s: string) => Number(rows.find((r) => r.status === s)?.n ?? 0);
      return { scheduled: n('scheduled'), firing: n('firing') };
    },

    async prune(before) {
      const r = await db.deleteFrom('hermes_reminder').where('status', 'in', ENDED).where('due_at', '<', before).executeTakeFirst();
      return Number(r.numDeletedRows);
    },
  };
}
