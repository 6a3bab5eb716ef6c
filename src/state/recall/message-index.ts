import { sql, type RawBuilder } from 'kysely';
import type { Logger } from '../../basics/log.js';
import { speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import type { OpenedDatabase } from '../store/database.js';
import { searchTerms } from './search-terms.js';

/**
 * The searchable copy of what was said: every message the bot accepted and every answer it gave,
 * with where and when, in `hermes_recall_message` (full-text indexed; recall-schema.ts). Written at two
 * points only (the gateway's accepted message and the turn driver's answer), never from session
 * code, so the session store can change shape without touching search.
 *
 * Who may find a message is decided inside the query, never by filtering afterwards:
 * - a DM message only by the person whose DM it is (`dm_owner`), nobody else, admins included;
 * - a thread message only by people who wrote in that thread;
 * - a top-level channel message by people who wrote anywhere in that channel.
 * Taking part is recorded from the person's own accepted messages (`hermes_recall_member`).
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

export function createMessageIndex(deps: { database: OpenedDatabase; log: Logger }): MessageIndex {
  const { database } = deps;
  const db = database.db;
  const listeners: Array<(m: { id: string; text: string }) => void> = [];

  async function record(m: IndexedMessage): Promise<void> {
    const text = m.text.trim().slice(0, MAX_INDEXED_CHARS);
    if (!text) return;
    const c = m.conversation;
    const owner = c.isDm ? (m.author === 'bot' ? m.dmOwner : m.author) : undefined;
    // A DM whose owner is unknown is never stored: nobody could be allowed to find it.
    if (c.isDm && !owner) return;
    const row = {
      id: m.id,
      platform: c.platform,
      workspace_id: c.workspaceId,
      channel_id: c.channelId,
      thread_id: c.threadId ?? '',
      parent_channel_id: c.parentChannelId ?? null,
      dm_owner: owner ? speakerKey(owner) : null,
      author: m.author === 'bot' ? 'bot' : speakerKey(m.author),
      author_name: m.author === 'bot' ? null : (m.author.displayName ?? m.author.userId),
      text,
      at: m.at,
    };
    const members =
      m.author !== 'bot' && !c.isDm
        ? [
            { channel_id: c.channelId, thread_id: c.threadId ?? '' },
            // A Discord thread is a channel of its own: writing in it is taking part in its parent too.
            ...(c.parentChannelId ? [{ channel_id: c.parentChannelId, thread_id: '' }] : []),
          ].map((p) => ({ ...p, member: speakerKey(m.author as Speaker), platform: c.platform, workspace_id: c.workspaceId, since: m.at }))
        : [];
    // No transaction: each statement stands on its own. Membership first (true once the person has
    // written here, whatever follows), then the message, whose full-text row comes with it (a
    // trigger on SQLite, a generated column on PostgreSQL). A crash between them leaves a member
    // row and no message, which shows nobody anything.
    for (const p of members) {
      await db.insertInto('hermes_recall_member').values(p).onConflict((oc) => oc.columns(['platform', 'workspace_id', 'channel_id', 'thread_id', 'member']).doNothing()).execute();
    }
    const added = await db.insertInto('hermes_recall_message').values(row).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst();
    if (Number(added.numInsertedOrUpdatedRows ?? 0n) > 0) for (const l of listeners) l({ id: m.id, text });
  }

  async function keywordSearch(speaker: Speaker, query: string, limit: number, scope: SearchScope): Promise<StoredMessage[]> {
    const terms = searchTerms(query);
    if (terms.length === 0) return [];
    const n = Math.max(1, Math.min(500, Math.floor(limit)));
    if (database.dialect === 'sqlite') {
      // Quoted terms joined by OR: any word may match, bm25 ranks messages with more (and rarer) ones first.
      const match = terms.map((t) => `"${t}"`).join(' OR ');
      const { rows } = await sql<Row>`select ${COLUMNS} from hermes_recall_message_fts f join hermes_recall_message m on m.seq = f.rowid
        where hermes_recall_message_fts match ${match} and ${visibleTo(speaker, scope)}
        order by bm25(hermes_recall_message_fts), m.at desc limit ${n}`.execute(db);
      return rows.map(toStored);
    }
    const tsquery = terms.join(' | ');
    const { rows } = await sql<Row>`select ${COLUMNS} from hermes_recall_message m, to_tsquery('english', ${tsquery}) q
      where m.tsv @@ q and ${visibleTo(speaker, scope)}
      order by ts_rank_cd(m.tsv, q) desc, m.at desc limit ${n}`.execute(db);
    return rows.map(toStored);
  }

  async function embeddedVisible(speaker: Speaker, model: string, limit: number, scope: SearchScope) {
    const n = Math.max(1, Math.min(10_000, Math.floor(limit)));
    const { rows } = await sql<Row & { vector: string }>`select ${COLUMNS}, e.vector from hermes_recall_message m
      join hermes_embedding e on e.kind = 'message' and e.ref = m.id and e.model = ${model}
      where ${visibleTo(speaker, scope)} order by m.at desc limit ${n}`.execute(db);
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
    keywordSearch,
    embeddedVisible,
    threadStart,
    onRecorded: (l) => {
      listeners.push(l);
    },
  };
}
