import type { Clock } from '../../basics/clock.js';
import { recordIndexes, shortId } from '../store/record-index.js';
import { storeKey, type Store } from '../store/store.js';
import type { ScheduleInput, SchedulePreview, ScheduleView, UserSchedules } from './user-schedules.js';
import { conversationKey, speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import { planClaim, type ClaimDecision, type ClaimRules } from './schedule-claim.js';
import { NO_SKIPS, SCHEDULE_LIMITS, ScheduleInputError, type RunOutcome, type ScheduleRecord } from './schedule-record.js';
import { describeSpec, isKnownZone, nextRunTimes, parseSchedule, type ScheduleSpec } from './schedule-spec.js';
import { describeCron } from './schedule-words.js';

/**
 * Scheduled tasks on the shared Store, with explicit indexes (the Store has no prefix scan):
 * - `schedule:<id>`                    the record (the truth);
 * - `schedules:owner:<speakerKey>`     ids of that user's active schedules (list, per-user limit);
 * - `schedules:due`                    [id, nextDueAt] of active schedules, sorted by time;
 * - `schedules:running`                [id, renewedAt] of runs in progress, to find dead ones.
 *
 * Every change of a record is a compare-and-set through Store.update; an index may briefly hold
 * an id whose record moved on (a crash between two writes), so readers check the record and
 * prune. Only the claim on the record decides who runs a due time.
 */
export interface ScheduleSettings {
  minIntervalS: number;
  maxPerUser: number;
  defaultTimezone: string;
}

export interface ScheduleStore {
  forUser(speaker: Speaker, conversation: Conversation, replyTo?: string): UserSchedules;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /** Active schedules with nextDueAt <= now, earliest first, at most `limit`. */
  due(now: number, limit: number): Promise<ScheduleRecord[]>;
  /** Compare-and-set of the due time the caller saw; the decision, or undefined when someone else moved it first. */
  claim(id: string, seenDueAt: number, now: number, busy: boolean, rules: ClaimRules): Promise<ClaimDecision | undefined>;
  /** Runs whose claim was not renewed for leaseMs (their process died). */
  deadRuns(now: number, leaseMs: number, limit: number): Promise<ScheduleRecord[]>;
  renew(id: string, runId: string): Promise<void>;
  /** Ends the run `runId` (if it is still the record's run); the record after, or undefined. */
  endRun(id: string, runId: string, outcome: RunOutcome, seenRenewedAt?: number): Promise<ScheduleRecord | undefined>;
  /** Stops every active schedule of an owner (they may no longer use the bot); how many. */
  stopOwner(ownerKey: string, why: string): Promise<number>;
  nextDueAt(): Promise<number | undefined>;
}

/** Ended schedules stay readable this long (for operators), then the store expires them. */
const ENDED_TTL_MS = 30 * 24 * 60 * 60 * 1000;
const SCAN_SLACK = 50;

const recordKey = (id: string) => storeKey('schedule', id);
const ownerIndex = (owner: string) => storeKey('schedules', 'owner', owner);
const DUE_KEY = storeKey('schedules', 'due');
const RUNNING_KEY = storeKey('schedules', 'running');

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

export function createScheduleStore(store: Store, clock: Clock, settings: ScheduleSettings): ScheduleStore {
  const load = (id: string) => store.get<ScheduleRecord>(recordKey(id));

  const index = recordIndexes<ScheduleRecord>(store);
  const casRecord = (id: string, change: (r: ScheduleRecord) => ScheduleRecord | undefined) => index.casRecord(recordKey(id), change);

  /** Keeps the due index in step with a record just written. */
  async function syncDue(r: ScheduleRecord): Promise<void> {
    if (r.status === 'active' && r.nextDueAt !== undefined) {
      const at = r.nextDueAt;
      await index.putTimed(DUE_KEY, r.id, at);
    } else {
      await index.removeTimed(DUE_KEY, [r.id]);
    }
  }

  /** A record that is over: out of every index, expiring later. */
  async function retire(r: ScheduleRecord): Promise<void> {
    await index.removeTimed(DUE_KEY, [r.id]);
    await index.removeIds(ownerIndex(r.ownerKey), [r.id]);
    if (!r.run) {
      await index.removeTimed(RUNNING_KEY, [r.id]);
      await store.set(recordKey(r.id), r, ENDED_TTL_MS);
    }
  }

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

  async function activeOf(owner: string): Promise<ScheduleRecord[]> {
    const ids = await index.ids(ownerIndex(owner));
    const records = await Promise.all(ids.map(load));
    const live = records.filter((r): r is ScheduleRecord => r !== undefined && r.status === 'active' && r.ownerKey === owner);
    const stale = ids.filter((id) => !live.some((r) => r.id === id));
    if (stale.length) await index.removeIds(ownerIndex(owner), stale);
    return live.sort((a, b) => a.createdAt - b.createdAt);
  }

  /** Adds the id to the owner's index unless the limit is reached (one compare-and-set). */
  async function reserve(owner: string, id: string): Promise<boolean> {
    const { after } = await store.update<string[]>(ownerIndex(owner), (cur = []) => (cur.length >= settings.maxPerUser ? undefined : [...cur, id]));
    return after?.includes(id) === true;
  }

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
        const id = shortId('s', 5);
        // An index may hold ids of schedules that ended in a crash: prune once before refusing.
        if (!(await reserve(owner, id)) && ((await activeOf(owner)).length >= settings.maxPerUser || !(await reserve(owner, id)))) {
          throw new ScheduleInputError(limitReached(settings.maxPerUser));
        }
        const now = clock.now();
        const first = nextRunTimes(spec, preview.timezone, now, 1)[0];
        const record: ScheduleRecord = {
          id, ownerKey: owner, speaker, conversation, ...(replyTo === undefined ? {} : { replyTo }),
          name: preview.name, task: preview.task, schedule: preview.schedule, spec, timezone: preview.timezone,
          createdAt: now, status: 'active', ...(first === undefined ? {} : { nextDueAt: first }), skipped: NO_SKIPS, runs: 0,
        };
        await store.set(recordKey(id), record);
        await syncDue(record);
        return viewOf(record, conversation);
      },

      async list() {
        return (await activeOf(owner)).map((r) => viewOf(r, conversation));
      },

      async cancel(rawId) {
        const id = rawId.trim().toLowerCase();
        const after = await casRecord(id, (r) => (r.ownerKey === owner && r.status === 'active' ? { ...r, status: 'cancelled', endedAt: clock.now() } : undefined));
        if (!after) return false;
        await retire(after);
        return true;
      },
    };
  }

  return {
    forUser,
    get: load,

    async due(now, limit) {
      const entries = await index.timed(DUE_KEY);
      const out: ScheduleRecord[] = [];
      const stale: string[] = [];
      const behind: ScheduleRecord[] = [];
      for (const [id, at] of entries.slice(0, limit + SCAN_SLACK)) {
        if (at > now || out.length >= limit) break;
        const r = await load(id);
        if (r?.status === 'active' && r.nextDueAt !== undefined && r.nextDueAt <= now) out.push(r);
        else if (!r || r.status !== 'active' || r.nextDueAt === undefined) stale.push(id);
        // A crash between the record's write and the index's left an old time: catch the index up,
        // or the timer would keep waking for it.
        else behind.push(r);
      }
      await index.removeTimed(DUE_KEY, stale);
      for (const r of behind) await syncDue(r);
      return out;
    },

    async claim(id, seenDueAt, now, busy, rules) {
      let decision: ClaimDecision | undefined;
      await casRecord(id, (r) => {
        decision = r.nextDueAt === seenDueAt ? planClaim(r, now, busy, rules) : undefined;
        return decision?.record;
      });
      if (!decision) return undefined;
      await syncDue(decision.record);
      if (decision.kind === 'run') {
        const at = decision.run.renewedAt;
        await index.putTimed(RUNNING_KEY, id, at);
      } else if (decision.record.nextDueAt === undefined && !decision.record.run) {
        const ended = await casRecord(id, (r) => (r.status === 'active' && r.nextDueAt === undefined && !r.run ? { ...r, status: 'finished', endedAt: now } : undefined));
        if (ended) await retire(ended);
      }
      return decision;
    },

    async deadRuns(now, leaseMs, limit) {
      const entries = await index.timed(RUNNING_KEY);
      const out: ScheduleRecord[] = [];
      const stale: string[] = [];
      for (const [id, renewedAt] of entries.slice(0, limit + SCAN_SLACK)) {
        if (out.length >= limit) break;
        if (now - renewedAt <= leaseMs) continue;
        const r = await load(id);
        if (!r?.run) stale.push(id);
        else if (now - r.run.renewedAt > leaseMs) out.push(r);
      }
      await index.removeTimed(RUNNING_KEY, stale);
      return out;
    },

    async renew(id, runId) {
      const at = clock.now();
      const after = await casRecord(id, (r) => (r.run?.runId === runId ? { ...r, run: { ...r.run, renewedAt: at } } : undefined));
      if (after) await index.putTimed(RUNNING_KEY, id, at);
    },

    async endRun(id, runId, outcome, seenRenewedAt) {
      const now = clock.now();
      const after = await casRecord(id, (r) => {
        if (r.run?.runId !== runId || (seenRenewedAt !== undefined && r.run.renewedAt !== seenRenewedAt)) return undefined;
        const { run, ...rest } = r;
        const ended: ScheduleRecord = { ...rest, runs: r.runs + 1, lastRun: { dueAt: run.dueAt, endedAt: now, outcome } };
        return r.status === 'active' && r.nextDueAt === undefined ? { ...ended, status: 'finished', endedAt: now } : ended;
      });
      if (!after) return undefined;
      await index.removeTimed(RUNNING_KEY, [id]);
      if (after.status !== 'active') await retire(after);
      return after;
    },

    async stopOwner(owner, why) {
      let n = 0;
      for (const r of await activeOf(owner)) {
        const after = await casRecord(r.id, (cur) => (cur.status === 'active' ? { ...cur, status: 'stopped', stoppedWhy: why, endedAt: clock.now() } : undefined));
        if (after) {
          n++;
          await retire(after);
        }
      }
      return n;
    },

    async nextDueAt() {
      const entries = await index.timed(DUE_KEY);
      return entries[0]?.[1];
    },
  };
}
