import type { Store } from './store.js';
import type { OpenedDatabase } from './database.js';

/**
 * Records the key-value store held besides user facts until migration 0010, moved into their
 * tables once, at the first start over data written before it (round 2's included): each key is
 * deleted after its row is written, so a crash in between moves it again and the row's key keeps
 * it single. Marks that only kept something from happening twice for a short while (a Slack
 * event id, a rate bucket, a notice given) are dropped rather than moved: the worst their loss
 * costs is one repeat at the upgrade.
 */
export interface LeftoversMoved {
  pausedTurns: number;
}

/** The part of a stored TurnState the table keeps in a column. */
interface OldTurnState {
  turnId?: unknown;
  sessionId?: unknown;
}

/** `turn:<id>`: the state of a turn waiting on an approval (round 2 wrote these as this version did). */
async function movePausedTurns(store: Store, database: OpenedDatabase, now: number): Promise<number> {
  let moved = 0;
  for (const key of await store.keysWithPrefix('turn:')) {
    const state = await store.get<OldTurnState>(key);
    const turnId = key.slice('turn:'.length);
    if (state && typeof state.sessionId === 'string' && turnId) {
      const r = await database.db
        .insertInto('hermes_paused_turn')
        .values({ turn_id: turnId, session_id: state.sessionId, state: JSON.stringify(state), paused_at: now })
        .onConflict((c) => c.column('turn_id').doNothing())
        .executeTakeFirst();
      if (Number(r.numInsertedOrUpdatedRows ?? 0n) > 0) moved++;
    }
    await store.delete(key);
  }
  return moved;
}

/** Drops short-lived marks the tables replace (their keys carry TTLs; nothing reads them now). */
async function dropMarks(store: Store, prefixes: readonly string[]): Promise<void> {
  for (const prefix of prefixes) for (const key of await store.keysWithPrefix(prefix)) await store.delete(key);
}

export async function moveKeyValueLeftovers(store: Store, database: OpenedDatabase, now: number): Promise<LeftoversMoved> {
  const pausedTurns = await movePausedTurns(store, database, now);
  await dropMarks(store, ['slack:event:']);
  return { pausedTurns };
}
