import type { OpenedDatabase } from '../store/database.js';

/**
 * The rows waiting behind the one a lane is running: how a running turn finds the messages that
 * arrived meanwhile (steering, gateway/steering.ts). A waiting row cannot be claimed while its
 * lane's current row is held (work-loop.ts), so the turn that reads it may take it over: it rewrites
 * the row's job (marking it taken in) and removes the row when the turn ends. Until then the row is
 * an ordinary accepted piece of work, so a crash in between loses nothing: the row runs on its own.
 */
export interface WaitingRow<J> {
  id: string;
  job: J;
}

/** Most rows looked at per call: a flood of messages is taken in over several model calls, not at once. */
export const MAX_WAITING_ROWS = 20;

export async function waitingInLane<J>(database: OpenedDatabase, lane: string, kind: string, exceptId: string, now: number): Promise<WaitingRow<J>[]> {
  const rows = await database.db
    .selectFrom('hermes_work')
    .select(['id', 'payload'])
    .where('lane', '=', lane)
    .where('kind', '=', kind)
    .where('id', '<>', exceptId)
    .where('claimed_by', 'is', null)
    .where('due_at', '<=', now)
    .orderBy('order_key')
    .orderBy('id')
    .limit(MAX_WAITING_ROWS)
    .execute();
  return rows.map((r) => ({ id: r.id, job: JSON.parse(r.payload) as J }));
}

/** Rewrites a waiting row's job (it stays waiting). False when the row is gone or was claimed. */
export async function rewriteWaiting<J>(database: OpenedDatabase, id: string, job: J): Promise<boolean> {
  const r = await database.db.updateTable('hermes_work').set({ payload: JSON.stringify(job) }).where('id', '=', id).where('claimed_by', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Removes waiting rows whose work was done elsewhere (never a row someone claimed meanwhile). */
export async function removeWaiting(database: OpenedDatabase, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const r = await database.db.deleteFrom('hermes_work').where('id', 'in', [...ids]).where('claimed_by', 'is', null).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Rewrites the job of a row its runner holds: a note for whoever claims it next, should this run
 * be cut off (a message taken into another turn marks when its own turn starts).
 */
export async function rewriteHeld<J>(database: OpenedDatabase, id: string, job: J): Promise<void> {
  await database.db.updateTable('hermes_work').set({ payload: JSON.stringify(job) }).where('id', '=', id).execute();
}
