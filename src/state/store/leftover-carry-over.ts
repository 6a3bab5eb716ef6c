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
  /** Conversations whose noted thread messages moved (`context:pending:<conversation>`). */
  notedThreads: number;
  /** Token counters of the last days (`usage:tokens:<day>:<person>`, `usage:pool:<day>:<key>`). */
  usageCounters: number;
  /** Roles last seen per person (`access:roles:<person>`). */
  personRoles: number;
  /** Slack assistant threads (`slack:assistant-thread:<channel>:<ts>`). */
  assistantThreads: number;
}

/** The parts of a `storeKey(...)` key, decoded (undefined unless it has exactly `n`). */
function parts(key: string, n: number): string[] | undefined {
  const p = key.split(':');
  if (p.length !== n) return undefined;
  try {
    return p.map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** Runs `move` on each live value under `prefix` (1 = moved), then deletes the key. */
async function eachKey<T>(store: Store, prefix: string, move: (key: string, value: T) => Promise<number>): Promise<number> {
  let moved = 0;
  for (const key of await store.keysWithPrefix(prefix)) {
    const value = await store.get<T>(key);
    if (value !== undefined && value !== null) moved += await move(key, value);
    await store.delete(key);
  }
  return moved;
}

const inserted = (r: { numInsertedOrUpdatedRows?: bigint }) => (Number(r.numInsertedOrUpdatedRows ?? 0n) > 0 ? 1 : 0);

interface OldContextMessage {
  id?: unknown;
  at?: unknown;
}

async function moveNoted(store: Store, database: OpenedDatabase): Promise<number> {
  return eachKey<OldContextMessage[]>(store, 'context:pending:', async (key, list) => {
    const p = parts(key, 3);
    const rows = Array.isArray(list) ? list.filter((m) => typeof m?.id === 'string') : [];
    if (!p || rows.length === 0) return 0;
    await database.db
      .insertInto('hermes_noted_message')
      .values(rows.map((m) => ({ conversation: p[2]!, id: m.id as string, at: Number(m.at) || 0, body: JSON.stringify(m) })))
      .onConflict((c) => c.columns(['conversation', 'id']).doNothing())
      .execute();
    return 1;
  });
}

async function moveUsage(store: Store, database: OpenedDatabase): Promise<number> {
  const move = (kind: 'person' | 'pool') => async (key: string, tokens: number) => {
    const p = parts(key, 4);
    if (!p || typeof tokens !== 'number' || !/^\d{4}-\d{2}-\d{2}$/.test(p[2]!)) return 0;
    // Added, not replaced: a charge counted in the table before the move is kept too.
    const r = await database.db
      .insertInto('hermes_usage')
      .values({ day: p[2]!, kind, subject: p[3]!, tokens })
      .onConflict((c) => c.columns(['day', 'kind', 'subject']).doUpdateSet({ tokens: (eb) => eb('hermes_usage.tokens', '+', eb.ref('excluded.tokens')) }))
      .executeTakeFirst();
    return inserted(r);
  };
  return (await eachKey(store, 'usage:tokens:', move('person'))) + (await eachKey(store, 'usage:pool:', move('pool')));
}

async function moveRoles(store: Store, database: OpenedDatabase, now: number): Promise<number> {
  return eachKey<string[]>(store, 'access:roles:', async (key, roles) => {
    const p = parts(key, 3);
    if (!p || !Array.isArray(roles)) return 0;
    const r = await database.db
      .insertInto('hermes_person_roles')
      .values({ person: p[2]!, roles: JSON.stringify(roles.filter((x) => typeof x === 'string')), seen_at: now })
      .onConflict((c) => c.column('person').doNothing())
      .executeTakeFirst();
    return inserted(r);
  });
}

async function moveAssistantThreads(store: Store, database: OpenedDatabase, now: number): Promise<number> {
  return eachKey<{ titled?: unknown }>(store, 'slack:assistant-thread:', async (key, mark) => {
    const p = parts(key, 3);
    const at = p?.[2]?.lastIndexOf(':') ?? -1;
    if (!p || at <= 0) return 0;
    const r = await database.db
      .insertInto('hermes_assistant_thread')
      .values({ channel_id: p[2]!.slice(0, at), thread_ts: p[2]!.slice(at + 1), titled: mark.titled === true ? 1 : 0, started_at: now })
      .onConflict((c) => c.columns(['channel_id', 'thread_ts']).doNothing())
      .executeTakeFirst();
    return inserted(r);
  });
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
  const notedThreads = await moveNoted(store, database);
  const usageCounters = await moveUsage(store, database);
  const personRoles = await moveRoles(store, database, now);
  const assistantThreads = await moveAssistantThreads(store, database, now);
  await dropMarks(store, ['slack:event:', 'usage:people:', 'usage:bot-warned:', 'access:notice:', 'rate:']);
  return { pausedTurns, notedThreads, usageCounters, personRoles, assistantThreads };
}
