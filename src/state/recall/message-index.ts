import { sql, type RawBuilder } from 'kysely';
import type { Logger } from '../../basics/log.js';
import { speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import type { OpenedDatabase } from '../store/database.js';
import { searchTerms } from './search-terms.js';

/**
 * The searchable copy of what was said: every message the bot accepted and every answer it gave,
 * with where and when, in `hermes_recall_message` (full-text indexed; recall-schema.ts). Written at two
 * points only (the gateway's accepted message and the turn driver's answer). The row is built here;
 * since schema step 0013 the history append carries it (`searchRow`) and a trigger of the recall
 * schema stores it in the append's own statement. The session store only carries the JSON and
 * never reads it, so it can change shape without touching search, and search without touching it.
 *
 * Who may find a message is decided inside the query, never by filtering afterwards:
 * - a DM message only by the person whose DM it is (`dm_owner`), nobody else, admins included;
 * - a thread message only by people who wrote in that thread;
 * - a top-level channel message by people who wrote anywhere in that channel.
 * Taking part is recorded from the person's own accepted messages (`hermes_recall_member`), by the
 * message's insert itself (recall-schema.ts, step 0011).
 */

export interface IndexedMessage {
  /** Unique per message (the platform's id of the post, or the answer's own id). */
  id: string;
  conversation: Conversation;
  /** The person who wrote it, or the bot's answer. */
  author: Speaker | 'bot';
  /** For the bot's answers in a DM: the person the DM belongs to. */
  dmOwner?: Speaker;
  text: string;
  at: number;
}

/** A search row that rides on a history append (SessionStore.append's `searchRow`). */
export interface SearchRow {
  /** What the append writes into `hermes_message.search_row`. */
  json: string;
  /** Call once the append is durable: tells the onRecorded listeners (the embedding queue). */
  written(): void;
}

/** A stored message as search sees it. */
export interface StoredMessage {
  seq: number;
  id: string;
  platform: string;
  workspaceId: string;
  channelId: string;
  /** Absent for a top-level post. */
  threadId?: string;
  parentChannelId?: string;
  isDm: boolean;
  /** The writer's display name (or id); "Hermes" for the bot's answers. */
  authorName: string;
  fromBot: boolean;
  text: string;
  at: number;
}

export interface MessageIndex {
  /** Stores one message (and who took part where). Idempotent by id: a replay adds nothing. */
  record(m: IndexedMessage): Promise<void>;
  /**
   * The message's search row for its history append to carry (schema step 0013: the append's own
   * statement stores it, as record() would); undefined when the message is not kept for search.
   */
  searchRow(m: IndexedMessage): SearchRow | undefined;
  /** Messages matching `query` that `speaker` may see, best keyword match first (at most `limit`). */
  keywordSearch(speaker: Speaker, query: string, limit: number, scope: SearchScope): Promise<StoredMessage[]>;
  /** The newest messages `speaker` may see that have an embedding from `model`, with it (at most `limit`). */
  embeddedVisible(speaker: Speaker, model: string, limit: number, scope: SearchScope): Promise<Array<{ message: StoredMessage; vector: string }>>;
  /** When the earliest stored message of a thread was written (to name a thread recognisably). */
  threadStart(m: Pick<StoredMessage, 'platform' | 'workspaceId' | 'channelId' | 'threadId'>): Promise<number | undefined>;
  /** Called with each stored message (the embedding queue listens here). */
  onRecorded(listener: (m: { id: string; text: string }) => void): void;
}

/** What one search may reach besides the visibility rule. */
export interface SearchScope {
  /** Include the speaker's own DMs (searching from a DM); never anyone else's. */
  dms: boolean;
  /** Message ids left out (the message being answered: search finds what was said before it). */
  exclude?: readonly string[];
}

/** Longest text stored per message: a pasted log is found by its start, and rows stay small. */
export const MAX_INDEXED_CHARS = 8_000;

/**
 * Most places one search narrows by (the person's channels and threads). Someone who took part in
 * more is searched the slower way: every match ranked, then the rule checked (still correct).
 */
export const MAX_PLACE_WORDS = 1_000;

/** Most messages one search ranks per list (see keywordSearch): bounds the work of a common word. */
export const RANKED_CANDIDATES = 1_000;

/** Where a message may be seen: its owner's DM, a channel's top level, or one thread. */
function placeKey(p: { platform: string; workspaceId: string; channelId: string; threadId: string; dmOwner: string | null }): string {
  if (p.dmOwner !== null) return `d|${p.dmOwner}`;
  if (p.threadId === '') return `c|${p.platform}|${p.workspaceId}|${p.channelId}`;
  return `t|${p.platform}|${p.workspaceId}|${p.channelId}|${p.threadId}`;
}

/**
 * A place as one word both full-text engines index unchanged: letters and digits only (hex), and
 * ending in a digit so no stemmer shortens it. Schema step 0009 writes the same words in SQL.
 */
export function placeWord(key: string): string {
  return `p${Buffer.from(key, 'utf8').toString('hex')}0`;
}

interface Row {
  seq: number | string;
  id: string;
  platform: string;
  workspace_id: string;
  channel_id: string;
  thread_id: string;
  parent_channel_id: string | null;
  dm_owner: string | null;
  author: string;
  author_name: string | null;
  text: string;
  at: number;
}

function toStored(r: Row): StoredMessage {
  return {
    seq: Number(r.seq),
    id: r.id,
    platform: r.platform,
    workspaceId: r.workspace_id,
    channelId: r.channel_id,
    ...(r.thread_id !== '' && { threadId: r.thread_id }),
    ...(r.parent_channel_id !== null && { parentChannelId: r.parent_channel_id }),
    isDm: r.dm_owner !== null,
    authorName: r.author === 'bot' ? 'Hermes' : (r.author_name ?? r.author),
    fromBot: r.author === 'bot',
    text: r.text,
    at: r.at,
  };
}

const COLUMNS = sql.raw('m.seq, m.id, m.platform, m.workspace_id, m.channel_id, m.thread_id, m.parent_channel_id, m.dm_owner, m.author, m.author_name, m.text, m.at');

/** The one visibility rule (see the header), as a condition on `m`. Both engines read it the same. */
function visibleTo(speaker: Speaker, scope: SearchScope): RawBuilder<unknown> {
  const me = speakerKey(speaker);
  // Outside a DM the speaker's own DMs are left out too: the answer would show them to the channel.
  const dms = scope.dms ? sql`m.dm_owner = ${me}` : sql`1 = 0`;
  const exclude = scope.exclude?.length ? sql`m.id not in (${sql.join([...scope.exclude])}) and ` : sql``;
  return sql`${exclude}m.platform = ${speaker.platform} and (${dms} or (m.dm_owner is null and exists (
    select 1 from hermes_recall_member p
    where p.member = ${me} and p.platform = m.platform and p.workspace_id = m.workspace_id and p.channel_id = m.channel_id
      and (p.thread_id = m.thread_id or m.thread_id = ''))))`;
}

/**
 * The search row of a message, as both writers store it (record(), and the history append's
 * trigger of schema step 0013, which reads these names from the JSON): undefined when the message
 * is not kept for search (no text; a DM whose owner is unknown, which nobody could be allowed to find).
 */
function rowOf(m: IndexedMessage) {
  const text = m.text.trim().slice(0, MAX_INDEXED_CHARS);
  if (!text) return undefined;
  const c = m.conversation;
  const owner = c.isDm ? (m.author === 'bot' ? m.dmOwner : m.author) : undefined;
  if (c.isDm && !owner) return undefined;
  const where = { platform: c.platform, workspaceId: c.workspaceId, channelId: c.channelId, threadId: c.threadId ?? '', dmOwner: owner ? speakerKey(owner) : null };
  return {
    id: m.id,
    platform: where.platform,
    workspace_id: where.workspaceId,
    channel_id: where.channelId,
    thread_id: where.threadId,
    parent_channel_id: c.parentChannelId ?? null,
    dm_owner: where.dmOwner,
    author: m.author === 'bot' ? 'bot' : speakerKey(m.author),
    author_name: m.author === 'bot' ? null : (m.author.displayName ?? m.author.userId),
    text,
    at: m.at,
    place: placeWord(placeKey(where)),
  };
}

export function createMessageIndex(deps: {
  database: OpenedDatabase;
  log: Logger;
  /** Most places a search narrows by (default MAX_PLACE_WORDS; tests lower it to reach the other path). */
  maxPlaceWords?: number;
}): MessageIndex {
  const maxPlaces = deps.maxPlaceWords ?? MAX_PLACE_WORDS;
  const { database } = deps;
  const db = database.db;
  const listeners: Array<(m: { id: string; text: string }) => void> = [];

  async function record(m: IndexedMessage): Promise<void> {
    const row = rowOf(m);
    if (!row) return;
    // One statement: the full-text row (a trigger on SQLite, a generated column on PostgreSQL) and
    // the author's membership of the place (a trigger on both, schema step 0011: a person's message
    // outside a DM makes them a member of its channel or thread, and of a Discord thread's parent
    // channel) are written by the insert itself, together or not at all.
    const added = await db.insertInto('hermes_recall_message').values(row).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst();
    if (Number(added.numInsertedOrUpdatedRows ?? 0n) > 0) notify(row);
  }

  function notify(row: { id: string; text: string }): void {
    for (const l of listeners) l({ id: row.id, text: row.text });
  }

  function searchRow(m: IndexedMessage): SearchRow | undefined {
    const row = rowOf(m);
    if (!row) return undefined;
    return { json: JSON.stringify(row), written: () => notify(row) };
  }

  /**
   * The words of the places `speaker` may see (see placeWord), from their memberships: each channel
   * they wrote in (its top level) and each thread; their own DMs when the scope has them. Undefined
   * when there are more than MAX_PLACE_WORDS (then the search is not narrowed by place).
   */
  async function placeWords(speaker: Speaker, scope: SearchScope): Promise<string[] | undefined> {
    const me = speakerKey(speaker);
    const rows = await db
      .selectFrom('hermes_recall_member')
      .select(['platform', 'workspace_id', 'channel_id', 'thread_id'])
      .where('member', '=', me)
      .where('platform', '=', speaker.platform)
      .limit(maxPlaces + 1)
      .execute();
    const words = new Set<string>();
    if (scope.dms) words.add(placeWord(placeKey({ platform: speaker.platform, workspaceId: '', channelId: '', threadId: '', dmOwner: me })));
    for (const r of rows) {
      const at = { platform: r.platform, workspaceId: r.workspace_id, channelId: r.channel_id, dmOwner: null };
      words.add(placeWord(placeKey({ ...at, threadId: '' })));
      if (r.thread_id !== '') words.add(placeWord(placeKey({ ...at, threadId: r.thread_id })));
    }
    return words.size > maxPlaces ? undefined : [...words];
  }

  async function keywordSearch(speaker: Speaker, query: string, limit: number, scope: SearchScope): Promise<StoredMessage[]> {
    const terms = searchTerms(query);
    if (terms.length === 0) return [];
    const n = Math.max(1, Math.min(500, Math.floor(limit)));
    const places = await placeWords(speaker, scope);
    if (places?.length === 0) return [];
    // Ranking is the costly part (bm25 / ts_rank_cd per row), so it is bounded: the newest
    // RANKED_CANDIDATES messages with any of the words, and the newest with all of them (so a precise
    // match in an old message is still found when one of its words is everywhere), are ranked
    // together. Both lists score a message the same way, so the union is ordered by one score.
    // Not narrowed by place (too many places), the newest matches may all be ones this person
    // cannot see: then nothing is cut before the rule is checked (no limit: -1 / NULL).
    const k = places ? RANKED_CANDIDATES : database.dialect === 'sqlite' ? -1 : null;
    if (database.dialect === 'sqlite') {
      // Quoted terms, in the text column only: bm25 ranks messages with more (and rarer) ones
      // first. The places narrow the matches inside the same MATCH (FTS5 intersects the lists, in
      // rowid order, newest first), so only messages in the person's places are ranked at all.
      const quoted = terms.map((t) => `"${t}"`);
      const inPlaces = places ? ` AND place : (${places.map((w) => `"${w}"`).join(' OR ')})` : '';
      const any = `text : (${quoted.join(' OR ')})${inPlaces}`;
      const all = `text : (${quoted.join(' AND ')})${inPlaces}`;
      const arm = (match: string) => sql`select * from (select rowid as seq, bm25(hermes_recall_message_fts, 1.0, 0.0) as score from hermes_recall_message_fts
        where hermes_recall_message_fts match ${match} order by rowid desc limit ${k})`;
      const candidates = terms.length > 1 ? sql`${arm(any)} union ${arm(all)}` : arm(any);
      // CROSS JOIN fixes the order (SQLite's planner otherwise walks every message of the platform
      // and looks each up in the candidates): the few candidates first, each message by its key.
      const { rows } = await sql<Row>`select ${COLUMNS} from (${candidates}) f cross join hermes_recall_message m on m.seq = f.seq
        where ${visibleTo(speaker, scope)}
        order by f.score, m.at desc limit ${n}`.execute(db);
      return rows.map(toStored);
    }
    // The lists hold ids only; the rank is computed afterwards, for the few hundred left.
    const inPlaces = places ? sql`m.place in (${sql.join(places)}) and ` : sql``;
    const arm = (tsquery: string) => sql`(select m.seq from hermes_recall_message m
      where ${inPlaces}m.tsv @@ to_tsquery('english', ${tsquery}) order by m.seq desc limit ${k})`;
    const candidates = terms.length > 1 ? sql`${arm(terms.join(' | '))} union ${arm(terms.join(' & '))}` : arm(terms.join(' | '));
    const { rows } = await sql<Row>`select ${COLUMNS} from (${candidates}) f join hermes_recall_message m on m.seq = f.seq
      where ${visibleTo(speaker, scope)}
      order by ts_rank_cd(m.tsv, to_tsquery('english', ${terms.join(' | ')})) desc, m.at desc limit ${n}`.execute(db);
    return rows.map(toStored);
  }

  async function embeddedVisible(speaker: Speaker, model: string, limit: number, scope: SearchScope) {
    const n = Math.max(1, Math.min(10_000, Math.floor(limit)));
    const places = await placeWords(speaker, scope);
    if (places?.length === 0) return [];
    const inPlaces = places ? sql`m.place in (${sql.join(places)}) and ` : sql``;
    const { rows } = await sql<Row & { vector: string }>`select ${COLUMNS}, e.vector from hermes_recall_message m
      join hermes_embedding e on e.kind = 'message' and e.ref = m.id and e.model = ${model}
      where ${inPlaces}${visibleTo(speaker, scope)} order by m.at desc limit ${n}`.execute(db);
    return rows.map((r) => ({ message: toStored(r), vector: r.vector }));
  }

  async function threadStart(m: Pick<StoredMessage, 'platform' | 'workspaceId' | 'channelId' | 'threadId'>): Promise<number | undefined> {
    if (!m.threadId) return undefined;
    const row = await db
      .selectFrom('hermes_recall_message')
      .select((eb) => eb.fn.min('at').as('first'))
      .where('platform', '=', m.platform)
      .where('workspace_id', '=', m.workspaceId)
      .where('channel_id', '=', m.channelId)
      .where('thread_id', '=', m.threadId)
      .executeTakeFirst();
    return row?.first === null || row?.first === undefined ? undefined : Number(row.first);
  }

  return {
    async record(m) {
      await record(m);
    },
    searchRow,
    keywordSearch,
    embeddedVisible,
    threadStart,
    onRecorded: (l) => {
      listeners.push(l);
    },
  };
}
