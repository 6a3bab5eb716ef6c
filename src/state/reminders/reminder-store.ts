import type { Clock } from '../../basics/clock.js';
import { recordIndexes, shortId } from '../store/record-index.js';
import { storeKey, type Store } from '../store/store.js';
import type { ReminderView, UserReminders } from './user-reminders.js';
import { conversationKey, speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import { LIMITS, ReminderInputError, type Reminder } from './reminder-record.js';

/**
 * Reminders on the shared Store, with explicit indexes (the Store has no prefix scan, and Keyv's
 * clear() would hit other users):
 * - `reminder:<id>`                the record;
 * - `reminders:owner:<speakerKey>` ids of that user's scheduled or firing reminders (the per-user limit);
 * - `reminders:due`                [id, dueAt] of scheduled reminders, sorted by dueAt;
 * - `reminders:firing`             [id, claimedAt] of claimed reminders, to find orphaned claims.
 *
 * The record is the truth; indexes may briefly hold an id whose record moved on (a crash between
 * two writes). Readers check the record and prune such entries, so an index can never make a
 * reminder fire twice: only the compare-and-set on the record (claim) can.
 */
export interface ReminderStore {
  /** The speaker's view: list and cancel never see anyone else's reminders. */
  forUser(speaker: Speaker, conversation: Conversation, replyTo?: string): UserReminders;
  get(id: string): Promise<Reminder | undefined>;
  /** Scheduled reminders with dueAt <= now, earliest first, at most `limit`. */
  due(now: number, limit?: number): Promise<Reminder[]>;
  /** Claimed reminders whose claim is older than leaseMs (their scheduler died mid-delivery). */
  orphans(now: number, leaseMs: number, limit?: number): Promise<Reminder[]>;
  /** Compare-and-set scheduled → firing. True for exactly one caller. */
  claim(id: string): Promise<boolean>;
  /**
   * Compare-and-set of an orphaned claim (still carrying the claimedAt the caller saw) to a fresh
   * claim marked maybeRepeat; the new record, or undefined when someone else moved it first.
   */
  takeOver(id: string, seenClaimedAt: number | undefined): Promise<Reminder | undefined>;
  /** Counts a delivery attempt and renews the claim, so a slow retry is not taken for an orphan. */
  recordAttempt(id: string, error?: string): Promise<void>;
  markFired(id: string, late: boolean): Promise<void>;
  markFailed(id: string, error: string): Promise<void>;
  /** Earliest dueAt among scheduled reminders. */
  nextDueAt(): Promise<number | undefined>;
  /** Index sizes for status output: upcoming reminders and deliveries in progress (may include a few stale entries). */
  counts(): Promise<{ scheduled: number; firing: number }>;
}

/** Finished records stay readable this long (for operators), then the store expires them. */
const FINISHED_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** How many index entries one due()/orphans() call may look at: keeps each call bounded. */
const SCAN_SLACK = 50;

const recordKey = (id: string) => storeKey('reminder', id);
const ownerKey = (owner: string) => storeKey('reminders', 'owner', owner);
const DUE_KEY = storeKey('reminders', 'due');
const FIRING_KEY = storeKey('reminders', 'firing');

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

export function createReminderStore(store: Store, clock: Clock): ReminderStore {
  const load = (id: string) => store.get<Reminder>(recordKey(id));

  const index = recordIndexes<Reminder>(store);

  /** Compare-and-set: applies `change` when `when` holds on the current record; the new record, or undefined. */
  const casRecord = (id: string, when: (r: Reminder) => boolean, change: (r: Reminder) => Reminder) =>
    index.casRecord(recordKey(id), (r) => (when(r) ? change(r) : undefined));

  /** Moves a record to a terminal state (if `from` allows), drops it from every index, starts its TTL. */
  async function finish(id: string, from: Reminder['status'][], patch: (r: Reminder) => Partial<Reminder>): Promise<Reminder | undefined> {
    const after = await casRecord(id, (r) => from.includes(r.status), (r) => ({ ...r, ...patch(r) }));
    if (!after) return undefined;
    await index.removeTimed(DUE_KEY, [id]);
    await index.removeTimed(FIRING_KEY, [id]);
    await index.removeIds(ownerKey(after.ownerKey), [id]);
    await store.set(recordKey(id), after, FINISHED_TTL_MS);
    return after;
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
        const record: Reminder = replyTo === undefined ? { id: '', ...base } : { id: '', ...base, replyTo };
        for (let attempt = 0; attempt < 8 && record.id === ''; attempt++) {
          const id = shortId('', 6);
          const { before } = await store.update<Reminder>(recordKey(id), (cur) => (cur ? undefined : { ...record, id }));
          if (before === undefined) record.id = id;
        }
        if (record.id === '') throw new Error('could not allocate a reminder id');
        const id = record.id;

        let added = false;
        await store.update<string[]>(ownerKey(owner), (cur = []) => {
          added = cur.length < LIMITS.maxScheduledPerUser;
          return added ? [...cur, id] : undefined;
        });
        if (!added) {
          await store.delete(recordKey(id));
          throw new ReminderInputError(
            `This user already has ${LIMITS.maxScheduledPerUser} scheduled reminders, the limit. Cancel one (list_reminders shows them) before adding another.`,
          );
        }
        await index.putTimed(DUE_KEY, id, dueAt);
        return toView(record);
      },

      async list() {
        const ids = await index.ids(ownerKey(owner));
        const mine: Reminder[] = [];
        const stale: string[] = [];
        for (const id of ids.slice(0, LIMITS.maxScheduledPerUser + SCAN_SLACK)) {
          const r = await load(id);
          if (r && r.ownerKey === owner && (r.status === 'scheduled' || r.status === 'firing')) mine.push(r);
          else stale.push(id);
        }
        await index.removeIds(ownerKey(owner), stale);
        return mine.sort((a, b) => a.dueAt - b.dueAt).map((r) => viewFrom(r, conversation));
      },

      async cancel(rawId) {
        const id = rawId.trim().toLowerCase();
        if (!/^[a-z0-9]{1,32}$/.test(id)) return false;
        const current = await load(id);
        // Someone else's id answers exactly like a missing one: no probing of other users' reminders.
        if (!current || current.ownerKey !== owner) return false;
        const done = await finish(id, ['scheduled'], () => ({ status: 'cancelled', cancelledAt: clock.now() }));
        return done !== undefined;
      },
    };
  }

  return {
    forUser,
    get: load,

    async due(now, limit = 50) {
      const entries = await index.timed(DUE_KEY);
      const out: Reminder[] = [];
      const stale: string[] = [];
      const moved: Reminder[] = [];
      let looked = 0;
      for (const [id, at] of entries) {
        if (at > now || out.length >= limit || looked >= limit + SCAN_SLACK) break;
        looked++;
        const r = await load(id);
        if (r?.status === 'scheduled') out.push(r);
        else if (r?.status === 'firing') moved.push(r);
        else stale.push(id);
      }
      // A claim whose due-index removal did not land: hand it to the firing index so orphans() sees it.
      for (const r of moved) await index.putTimed(FIRING_KEY, r.id, r.claimedAt ?? 0);
      await index.removeTimed(DUE_KEY, [...stale, ...moved.map((r) => r.id)]);
      return out;
    },

    async orphans(now, leaseMs, limit = 50) {
      const entries = await index.timed(FIRING_KEY);
      const out: Reminder[] = [];
      const stale: string[] = [];
      let looked = 0;
      for (const [id, claimedAt] of entries) {
        if (claimedAt > now - leaseMs || out.length >= limit || looked >= limit + SCAN_SLACK) break;
        looked++;
        const r = await load(id);
        if (r?.status !== 'firing') stale.push(id);
        else if ((r.claimedAt ?? 0) <= now - leaseMs) out.push(r);
      }
      await index.removeTimed(FIRING_KEY, stale);
      return out;
    },

    async claim(id) {
      const claimedAt = clock.now();
      const claimed = await casRecord(id, (r) => r.status === 'scheduled', (r) => ({ ...r, status: 'firing', claimedAt, attempts: 0 }));
      if (!claimed) return false;
      await index.putTimed(FIRING_KEY, id, claimedAt);
      await index.removeTimed(DUE_KEY, [id]);
      return true;
    },

    async takeOver(id, seenClaimedAt) {
      const claimedAt = clock.now();
      const after = await casRecord(
        id,
        (r) => r.status === 'firing' && r.claimedAt === seenClaimedAt,
        (r) => ({ ...r, claimedAt, maybeRepeat: true }),
      );
      if (!after) return undefined;
      await index.putTimed(FIRING_KEY, id, claimedAt);
      return after;
    },

    async recordAttempt(id, error) {
      const claimedAt = clock.now();
      const after = await casRecord(
        id,
        (r) => r.status === 'firing',
        (r) => ({ ...r, claimedAt, attempts: (r.attempts ?? 0) + 1, ...(error === undefined ? {} : { lastError: error.slice(0, 500) }) }),
      );
      if (after) await index.putTimed(FIRING_KEY, id, claimedAt);
    },

    async markFired(id, late) {
      await finish(id, ['firing'], () => ({ status: 'fired', firedAt: clock.now(), late }));
    },

    async markFailed(id, error) {
      await finish(id, ['firing'], () => ({ status: 'failed', lastError: error.slice(0, 500) }));
    },

    async nextDueAt() {
      const entries = await index.timed(DUE_KEY);
      return entries[0]?.[1];
    },

    async counts() {
      const [due, firing] = await Promise.all([index.timed(DUE_KEY), index.timed(FIRING_KEY)]);
      return { scheduled: due.length, firing: firing.length };
    },
  };
}
