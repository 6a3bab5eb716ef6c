import { NO_SKIPS, type ClaimedRun, type ScheduleRecord } from './schedule-record.js';
import { nextRunTimes } from './schedule-spec.js';

/**
 * What to do with a schedule whose next due time has come: the pure core of "exactly once per
 * due time". The caller applies the result as ONE compare-and-set on the record (it moves
 * nextDueAt past `now`), so whichever process wins the write owns these due times and nobody
 * else ever sees them again.
 *
 * - The previous run is still going → every due time up to now is skipped (counted as busy).
 * - Otherwise the latest due time runs if it is at most `graceMs` late; the earlier ones (missed
 *   while the bot was down) are skipped and counted, so the run's post can mention them. At most
 *   one late run, however many were missed.
 * - Latest due time more than `graceMs` late → all skipped, counted for the next run's post.
 */
export interface ClaimRules {
  graceMs: number;
  /** Later than this counts as late (the post says so); so does anything due before `startedAt`. */
  lateAfterMs: number;
  /** When this process started: a due time before it fell while the bot was down. */
  startedAt: number;
}

export type ClaimDecision =
  | { kind: 'run'; record: ScheduleRecord; run: ClaimedRun }
  | { kind: 'skip'; record: ScheduleRecord; why: 'busy' | 'too_late'; dueAt: number; count: number };

/** Due times counted per claim at most; a longer outage is reported as "at least" this many. */
export const MAX_COUNTED = 10_000;
const BATCH = 500;

/** The due times from `first` up to `now`, oldest first (bounded by MAX_COUNTED). */
function dueUpTo(r: ScheduleRecord, first: number, now: number): number[] {
  const out = [first];
  let cursor = first;
  while (out.length < MAX_COUNTED) {
    const batch = nextRunTimes(r.spec, r.timezone, cursor, BATCH).filter((t) => t <= now);
    out.push(...batch.slice(0, MAX_COUNTED - out.length));
    if (batch.length < BATCH) break;
    cursor = batch[batch.length - 1] as number;
  }
  return out;
}

export function planClaim(r: ScheduleRecord, now: number, busy: boolean, rules: ClaimRules): ClaimDecision | undefined {
  if (r.status !== 'active' || r.nextDueAt === undefined || r.nextDueAt > now) return undefined;
  const due = dueUpTo(r, r.nextDueAt, now);
  const latest = due[due.length - 1] as number;
  const next = nextRunTimes(r.spec, r.timezone, Math.max(now, latest), 1)[0];
  const moved: ScheduleRecord = { ...r, nextDueAt: next };
  if (next === undefined) delete moved.nextDueAt;

  if (busy) {
    return { kind: 'skip', why: 'busy', dueAt: latest, count: due.length, record: { ...moved, skipped: { ...r.skipped, busy: r.skipped.busy + due.length } } };
  }
  if (now - latest > rules.graceMs) {
    return { kind: 'skip', why: 'too_late', dueAt: latest, count: due.length, record: { ...moved, skipped: { ...r.skipped, down: r.skipped.down + due.length } } };
  }
  const run: ClaimedRun = {
    runId: `${r.id}@${latest}`,
    dueAt: latest,
    claimedAt: now,
    renewedAt: now,
    late: now - latest > rules.lateAfterMs || latest < rules.startedAt,
    skipped: { down: r.skipped.down + due.length - 1, busy: r.skipped.busy },
  };
  return { kind: 'run', run, record: { ...moved, run, skipped: NO_SKIPS } };
}
