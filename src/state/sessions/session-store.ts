import { randomBytes } from 'node:crypto';
import type { Clock } from '../../basics/clock.js';
import { conversationKey, type ChatMessage, type Conversation } from '../../basics/types.js';
import { reusableQuery, type OpenedDatabase, type Tx } from '../store/database.js';
import { SESSION_TAKEN } from '../store/session-schema.js';
import { createKeyedSerialiser } from '../store/keyed-serialiser.js';

export interface SessionRecord {
  id: string;
  conversationKey: string;
  createdAt: number;
  summary?: string;
  /** Count of history messages covered by `summary`. */
  summarizedUpTo: number;
  /** Only on what current() returns when that call created the session: it has no history and no approvals yet. */
  created?: true;
  /**
   * Only with `created`: the conversation was not joined when that call looked (its read, or on
   * PostgreSQL the start statement itself, which an `opens` call makes without a read). Messages
   * are noted only in joined threads (gateway.ts `accepts`) and a join is never undone, so none of
   * this conversation's messages had been noted by then, on any instance.
   */
  neverJoined?: true;
}

export interface SessionStore {
  /**
   * The conversation's live session; the first one is created lazily. `join`: the bot answers
   * here, so the conversation is also marked joined (as markJoined, in the same statements).
   * `opens`: the caller's message opens this conversation (it starts the thread it is in), so it
   * most likely has no session yet: the start is tried first, one statement instead of a read and
   * the start; when a session is there after all, it is read as usual and the start wrote nothing.
   */
  current(conversation: Conversation, opts?: { join?: boolean; opens?: boolean }): Promise<SessionRecord>;
  /** The live session under a key of its own (a scheduled task's runs), created lazily. */
  currentByKey(key: string): Promise<SessionRecord>;
  get(sessionId: string): Promise<SessionRecord | undefined>;
  /**
   * The session and the history its summary does not cover yet (from `summarizedUpTo` on), in
   * one read: what every model call of a turn needs.
   */
  withHistory(sessionId: string): Promise<{ session: SessionRecord; history: ChatMessage[] } | undefined>;
  /**
   * While a turn of the session's conversation runs here, no other instance writes its history:
   * every write to a session's history is made by the job that holds the conversation's lane
   * (turns, approval continuations, the repair before a turn; work-queue.ts runs a lane's rows one
   * at a time on all instances). So from `hold` until the returned release, withHistory answers
   * from what this store read or wrote (a session `created` by this turn starts empty) instead of
   * reading the table for every model call. Call it right after current(), inside the lane's job,
   * and release when the job ends. On SQLite (one instance) the history is kept anyway.
   */
  hold(session: SessionRecord): () => void;
  /** Archives the current session (kept, listed by archived()) and starts one with a new id. */
  startNew(conversation: Conversation): Promise<SessionRecord>;
  /** Messages in order; `from` skips the first `from` (e.g. those already in the summary). */
  history(sessionId: string, from?: number): Promise<ChatMessage[]>;
  /**
   * Append-only; one call costs the same however long the history already is. `searchRow`: the
   * search index's row for the last message (opaque JSON, built by the recall module), written in
   * the same statement; the recall schema's trigger (step 0013) stores it for search. `charge`:
   * the token charge of the model call the messages come from (opaque JSON, built by the usage
   * meter), added to the day's counters in the same statement (step 0015's trigger).
   */
  append(sessionId: string, messages: ChatMessage[], opts?: { searchRow?: string; charge?: string }): Promise<void>;
  setSummary(sessionId: string, summary: string, summarizedUpTo: number): Promise<void>;
  /** Old session ids of this conversation, oldest first. */
  archived(conversation: Conversation): Promise<string[]>;
  /** The bot took part in this thread, so it answers there without a mention (persisted). */
  markJoined(conversation: Conversation): Promise<void>;
  isJoined(conversation: Conversation): Promise<boolean>;
}

/** Joined conversations remembered in this process (a join is never undone, so this is never stale). */
const JOINED_MEMO_MAX = 10_000;
/** Sessions whose unsummarised history one process on its own SQLite file keeps in memory. */
const HISTORY_CACHE_MAX = 256;

interface SessionRow {
  id: string;
  conversation_key: string;
  created_at: number;
  summary: string | null;
  summarized_up_to: number;
}

function recordOf(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    conversationKey: row.conversation_key,
    createdAt: Number(row.created_at),
    ...(row.summary === null ? {} : { summary: row.summary }),
    summarizedUpTo: Number(row.summarized_up_to),
  };
}

const SESSION_COLUMNS = ['s.id', 's.conversation_key', 's.created_at', 's.summary', 's.summarized_up_to'] as const;

/**
 * Sessions in tables (db-schema.ts): `hermes_conversation` points at each conversation's live
 * session, `hermes_session` holds a session's summary, `hermes_message` its history, one row per
 * message numbered from 0. An append inserts only the new rows (the history is never rewritten);
 * a model call reads the session and the part of its history the summary does not cover in one
 * query. Starting a conversation's first session is one statement, replacing and archiving one are
 * one transaction, so a conversation never points at a session that is not there.
 */
export function createSessionStore(database: OpenedDatabase, clock: Clock): SessionStore {
  const { db } = database;
  // Creating a conversation's session (and appending to one) is serialised in this process; on a
  // shared database the statements themselves settle a race with another instance.
  const locks = createKeyedSerialiser();
  const joined = new Set<string>();
  const history = createHistoryCache(database.dialect === 'sqlite');
  type Nullable<T> = { [K in keyof T]: T[K] | null };

  // One statement: the number is taken and the row written atomically (with the message's search
  // row and the model call's charge, when it has them). Built once (a step appends two or three times).
  const appendOne = reusableQuery<'sessionId' | 'body' | 'searchRow' | 'charge', never>(db, (v) =>
    db
      .insertInto('hermes_message')
      .columns(['session_id', 'seq', 'body', 'search_row', 'charge'])
      .expression((eb) =>
        eb
          .selectFrom('hermes_message')
          .select([
            eb.val(v('sessionId')).as('session_id'),
            eb(eb.fn.coalesce(eb.fn.max('seq'), eb.lit(-1)), '+', eb.lit(1)).as('seq'),
            eb.val(v('body')).as('body'),
            eb.val(v<string | null>('searchRow')).as('search_row'),
            eb.val(v<string | null>('charge')).as('charge'),
          ])
          .where('session_id', '=', v('sessionId')),
      ),
  );

  // A new session is two statements (look, then the start: session row and pointer in one, schema
  // step 0012), for every new thread: built once too.
  // A conversation row without a session (joined before its first session: an answer outside a
  // turn) still says whether it is joined.
  const selectCurrent = reusableQuery<'convKey', Nullable<SessionRow> & { joined: number }>(db, (v) =>
    db
      .selectFrom('hermes_conversation as c')
      .leftJoin('hermes_session as s', 's.id', 'c.current_session')
      .select([...SESSION_COLUMNS, 'c.joined'])
      .where('c.key', '=', v('convKey')),
  );
  const startValues = (v: <T = string>(name: 'id' | 'convKey' | 'createdAt' | 'joined') => T) => ({ id: v('id'), conversation_key: v('convKey'), created_at: v<number>('createdAt'), joined: v<number>('joined') });
  // PostgreSQL: the start also says whether the conversation was joined before it (`was_joined`,
  // read from the statement's snapshot, before the trigger's writes; null: no conversation row),
  // so a start that skipped the look (`opens`) still knows what the look would have said.
  // SQLite answers the noted-messages question from memory (noted-messages.ts): no need there.
  const startSession =
    database.dialect === 'postgres'
      ? reusableQuery<'id' | 'convKey' | 'createdAt' | 'joined', { was_joined: number | null }>(db, (v) =>
          db
            .with('was', (w) => w.selectFrom('hermes_conversation').select('joined').where('key', '=', v('convKey')))
            .insertInto('hermes_session_start')
            .values(startValues(v))
            .returning((eb) => eb.selectFrom('was').select('was.joined').as('was_joined')),
        )
      : reusableQuery<'id' | 'convKey' | 'createdAt' | 'joined', { was_joined?: undefined }>(db, (v) => db.insertInto('hermes_session_start').values(startValues(v)));

  const newId = (convKey: string) => `${convKey}#${clock.now().toString(36)}-${randomBytes(6).toString('base64url')}`;

  async function readCurrent(convKey: string): Promise<{ record: SessionRecord | undefined; joined: boolean }> {
    const [row] = (await selectCurrent({ convKey })).rows;
    const joined = Number(row?.joined ?? 0) === 1;
    return { record: row && row.id !== null ? recordOf(row as SessionRow) : undefined, joined };
  }

  function newRecord(convKey: string): SessionRecord {
    return { id: newId(convKey), conversationKey: convKey, createdAt: clock.now(), summarizedUpTo: 0 };
  }

  /**
   * The live session, created when there is none: the first writer wins, everyone uses its session.
   * Creating is one statement (session-schema.ts): the session row and the conversation pointed at
   * it, or, when the conversation has a live session already, nothing at all.
   */
  async function currentLocked(convKey: string, join: boolean, opens = false): Promise<SessionRecord> {
    const found = opens ? undefined : await readCurrent(convKey);
    if (found?.joined) rememberJoined(convKey);
    if (found?.record) {
      if (join && !found.joined) await markJoinedKey(convKey);
      return found.record;
    }
    const record = newRecord(convKey);
    try {
      const started = await startSession({ id: record.id, convKey, createdAt: record.createdAt, joined: join ? 1 : 0 });
      if (join) rememberJoined(convKey);
      history.put(record, []);
      // Known unjoined when the conversation was looked at, or (PostgreSQL) when the start said so;
      // an `opens` guess on SQLite skipped the look and says nothing.
      const wasJoined = started.rows[0]?.was_joined;
      const unjoined = found !== undefined ? !found.joined : wasJoined !== undefined && Number(wasJoined ?? 0) !== 1;
      return { ...record, created: true, ...(unjoined && { neverJoined: true as const }) };
    } catch (err) {
      if (!String((err as Error).message).includes(SESSION_TAKEN)) throw err;
    }
    // Another instance (or, for an `opens` guess that was wrong, an earlier turn) started one first: it is used.
    const theirs = await readCurrent(convKey);
    if (!theirs.record) throw new Error(`conversation ${convKey}: its session could not be read back`);
    if (join && !theirs.joined) await markJoinedKey(convKey);
    return theirs.record;
  }

  async function markJoinedKey(key: string): Promise<void> {
    // Called for every answer in a thread: once known here, nothing is written again.
    if (joined.has(key)) return;
    await db
      .insertInto('hermes_conversation')
      .values({ key, current_session: null, joined: 1 })
      .onConflict((c) => c.column('key').doUpdateSet({ joined: 1 }))
      .execute();
    rememberJoined(key);
  }

  async function nextSeq(q: Pick<Tx, 'selectFrom'>, sessionId: string): Promise<number> {
    const row = await q.selectFrom('hermes_message').select((eb) => eb.fn.max('seq').as('top')).where('session_id', '=', sessionId).executeTakeFirst();
    return row?.top === null || row?.top === undefined ? 0 : Number(row.top) + 1;
  }

  function rememberJoined(key: string): void {
    if (joined.size >= JOINED_MEMO_MAX) joined.clear();
    joined.add(key);
  }

  return {
    current(conversation, opts) {
      const convKey = conversationKey(conversation);
      return locks.run(`conv:${convKey}`, () => currentLocked(convKey, opts?.join === true, opts?.opens === true));
    },

    currentByKey(key) {
      return locks.run(`conv:${key}`, () => currentLocked(key, false));
    },

    async get(sessionId) {
      const row = await db.selectFrom('hermes_session as s').select(SESSION_COLUMNS).where('s.id', '=', sessionId).executeTakeFirst();
      return row ? recordOf(row) : undefined;
    },

    async withHistory(sessionId) {
      const cached = history.get(sessionId);
      if (cached) return cached;
      const seen = history.mark();
      const rows = await db
        .selectFrom('hermes_session as s')
        .leftJoin('hermes_message as m', (j) => j.onRef('m.session_id', '=', 's.id').onRef('m.seq', '>=', 's.summarized_up_to'))
        .select([...SESSION_COLUMNS, 'm.body'])
        .where('s.id', '=', sessionId)
        .orderBy('m.seq')
        .execute();
      const first = rows[0];
      if (!first) return undefined;
      const bodies = rows.flatMap((r) => (r.body === null ? [] : [r.body]));
      history.fill(seen, recordOf(first), bodies);
      return { session: recordOf(first), history: bodies.map((b) => JSON.parse(b) as ChatMessage) };
    },

    hold: (session) => history.hold(session),

    startNew(conversation) {
      const convKey = conversationKey(conversation);
      return locks.run(`conv:${convKey}`, () =>
        db.transaction().execute(async (tx) => {
          const now = clock.now();
          const cur = await tx.selectFrom('hermes_conversation').select('current_session').where('key', '=', convKey).executeTakeFirst();
          if (cur?.current_session) await tx.updateTable('hermes_session').set({ archived_at: now }).where('id', '=', cur.current_session).where('archived_at', 'is', null).execute();
          const record = newRecord(convKey);
          await tx.insertInto('hermes_session').values({ id: record.id, conversation_key: convKey, created_at: record.createdAt, summary: null, summarized_up_to: 0, archived_at: null }).execute();
          await tx
            .insertInto('hermes_conversation')
            .values({ key: convKey, current_session: record.id, joined: 0 })
            .onConflict((c) => c.column('key').doUpdateSet({ current_session: record.id }))
            .execute();
          return record;
        }),
      );
    },

    async history(sessionId, from = 0) {
      const start = Math.max(0, Math.floor(from));
      const rows = await db.selectFrom('hermes_message').select('body').where('session_id', '=', sessionId).where('seq', '>=', start).orderBy('seq').execute();
      return rows.map((r) => JSON.parse(r.body) as ChatMessage);
    },

    append(sessionId, messages, opts) {
      if (messages.length === 0) return Promise.resolve();
      // Serialised once: the same text goes into the table and into the history cache.
      const bodies = messages.map((m) => JSON.stringify(m));
      const searchRow = opts?.searchRow ?? null;
      const charge = opts?.charge ?? null;
      return locks.run(`session:${sessionId}`, () => history.writing(sessionId, bodies, async () => {
        if (bodies.length === 1) {
          await appendOne({ sessionId, body: bodies[0], searchRow, charge });
          return;
        }
        await db.transaction().execute(async (tx) => {
          const base = await nextSeq(tx, sessionId);
          const last = bodies.length - 1;
          await tx
            .insertInto('hermes_message')
            .values(bodies.map((body, i) => ({ session_id: sessionId, seq: base + i, body, search_row: i === last ? searchRow : null, charge: i === last ? charge : null })))
            .execute();
        });
      }));
    },

    async setSummary(sessionId, summary, summarizedUpTo) {
      history.drop(sessionId);
      const r = await db.updateTable('hermes_session').set({ summary, summarized_up_to: summarizedUpTo }).where('id', '=', sessionId).executeTakeFirst().finally(() => history.drop(sessionId));
      if (Number(r.numUpdatedRows) === 0) throw new Error(`session ${sessionId} does not exist, so its summary cannot be set`);
    },

    async archived(conversation) {
      const rows = await db
        .selectFrom('hermes_session')
        .select('id')
        .where('conversation_key', '=', conversationKey(conversation))
        .where('archived_at', 'is not', null)
        .orderBy('archived_at')
        .orderBy('created_at')
        .execute();
      return rows.map((r) => r.id);
    },

    markJoined: (conversation) => markJoinedKey(conversationKey(conversation)),

    async isJoined(conversation) {
      const key = conversationKey(conversation);
      if (joined.has(key)) return true;
      const row = await db.selectFrom('hermes_conversation').select('joined').where('key', '=', key).executeTakeFirst();
      const yes = Number(row?.joined ?? 0) === 1;
      if (yes) rememberJoined(key);
      return yes;
    },
  };
}

/**
 * The unsummarised history of recently used sessions, kept where no other writer can change it:
 * always for a lone instance on its own SQLite file (sqlite-owner-lock.ts), and on PostgreSQL only
 * for sessions held (SessionStore.hold: their conversation's lane is this instance's while its job
 * runs). Every append goes through this store, so an entry kept in step with them is what the table
 * holds, and a turn's model calls need not read it back. Bodies are kept as the JSON the table
 * holds and parsed on every read, so callers get fresh objects as from the table. A held entry is
 * forgotten when its hold is released: after that another instance may write the session.
 */
function createHistoryCache(always: boolean) {
  const entries = new Map<string, { session: SessionRecord; bodies: string[] }>();
  /** PostgreSQL: sessions held here, with how many holds each (a lane runs one job at a time; counted anyway). */
  const held = new Map<string, number>();
  const keeps = (id: string) => always || held.has(id);
  // Write counter; lastWrite holds each session's latest, `cleared` stands in for those forgotten.
  let clock = 0;
  let cleared = 0;
  const lastWrite = new Map<string, number>();
  const wrote = (id: string) => {
    clock++;
    if (lastWrite.size >= HISTORY_CACHE_MAX * 4) {
      lastWrite.clear();
      cleared = clock;
    }
    lastWrite.set(id, clock);
  };
  const put = (session: SessionRecord, bodies: string[]) => {
    if (entries.size >= HISTORY_CACHE_MAX) {
      // Held entries stay (their holds are bounded by the work loop's concurrency); the rest go.
      for (const id of entries.keys()) if (!held.has(id)) entries.delete(id);
    }
    const { created: _created, neverJoined: _neverJoined, ...plain } = session;
    entries.set(session.id, { session: plain, bodies });
  };
  return {
    get(id: string): { session: SessionRecord; history: ChatMessage[] } | undefined {
      const e = keeps(id) ? entries.get(id) : undefined;
      return e && { session: { ...e.session }, history: e.bodies.map((b) => JSON.parse(b) as ChatMessage) };
    },
    /** Before a read of the table: fill() keeps what it read only if nothing was written since. */
    mark: () => clock,
    fill(seen: number, session: SessionRecord, bodies: string[]): void {
      if (keeps(session.id) && (lastWrite.get(session.id) ?? cleared) <= seen) put(session, bodies);
    },
    put(session: SessionRecord, bodies: string[]): void {
      if (!keeps(session.id)) return;
      wrote(session.id);
      put(session, bodies);
    },
    hold(session: SessionRecord): () => void {
      if (always) return () => undefined;
      const id = session.id;
      held.set(id, (held.get(id) ?? 0) + 1);
      // Created by this turn's current(): nothing is in it yet but what this store appends from now on.
      if (session.created && !entries.has(id)) {
        wrote(id);
        put(session, []);
      }
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (held.get(id) ?? 1) - 1;
        if (left > 0) held.set(id, left);
        else {
          held.delete(id);
          entries.delete(id);
          wrote(id);
        }
      };
    },
    /** Runs an append; on success its rows join the entry, on failure the entry is dropped. */
    async writing(id: string, bodies: string[], write: () => Promise<void>): Promise<void> {
      if (!keeps(id)) return write();
      wrote(id);
      try {
        await write();
      } catch (err) {
        entries.delete(id);
        throw err;
      } finally {
        wrote(id);
      }
      if (keeps(id)) entries.get(id)?.bodies.push(...bodies);
    },
    drop(id: string): void {
      wrote(id);
      entries.delete(id);
    },
  };
}
