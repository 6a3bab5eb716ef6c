import type { OpenedDatabase } from '../store/database.js';

/**
 * The state of turns waiting on an approval decision, in `hermes_paused_turn` (one row per turn,
 * JSON the gateway's TurnState). Written when a turn pauses, before its prompt is posted; read
 * when the decision resumes it and, after a crash, to tell a turn that reached its prompt from one
 * cut off before it; deleted when the turn ends.
 */
export interface PausedTurns<S> {
  save(turnId: string, sessionId: string, state: S): Promise<void>;
  get(turnId: string): Promise<S | undefined>;
  /** Which of these turns have a stored state (one statement for all). */
  which(turnIds: readonly string[]): Promise<Set<string>>;
  delete(turnId: string): Promise<void>;
}

export function createPausedTurns<S>(database: OpenedDatabase, now: () => number): PausedTurns<S> {
  const { db } = database;
  return {
    async save(turnId, sessionId, state) {
      const row = { turn_id: turnId, session_id: sessionId, state: JSON.stringify(state), paused_at: now() };
      // A turn pauses again after each decision that lets it go on: the newest state wins.
      await db
        .insertInto('hermes_paused_turn')
        .values(row)
        .onConflict((c) => c.column('turn_id').doUpdateSet({ session_id: row.session_id, state: row.state, paused_at: row.paused_at }))
        .execute();
    },
    async get(turnId) {
      const row = await db.selectFrom('hermes_paused_turn').select('state').where('turn_id', '=', turnId).executeTakeFirst();
      return row ? (JSON.parse(row.state) as S) : undefined;
    },
    async which(turnIds) {
      if (turnIds.length === 0) return new Set();
      const rows = await db.selectFrom('hermes_paused_turn').select('turn_id').where('turn_id', 'in', [...turnIds]).execute();
      return new Set(rows.map((r) => r.turn_id));
    },
    async delete(turnId) {
      await db.deleteFrom('hermes_paused_turn').where('turn_id', '=', turnId).execute();
    },
  };
}
