import type { Clock } from '../../basics/clock.js';
import { speakerKey, type Conversation, type Speaker } from '../../basics/types.js';
import type { OpenedDatabase } from '../store/database.js';
import type { Invalidations } from '../cluster/invalidations.js';

/**
 * A channel's standing notes ("deploys go through #ops", "our fiscal year starts in April"), set
 * with `/hermes notes set` and shown to the model on every turn in that channel. One row per
 * channel; a thread shares its channel's notes (a Discord thread, its parent's).
 */
export interface ChannelNote {
  text: string;
  /** Speaker key of who set them. */
  setBy: string;
  setAt: number;
}

export interface ChannelNotes {
  get(c: Conversation): Promise<ChannelNote | undefined>;
  set(c: Conversation, text: string, by: Speaker): Promise<void>;
  clear(c: Conversation): Promise<boolean>;
}

/** Longest notes: they ride along in every prompt of the channel. */
export const MAX_CHANNEL_NOTE_CHARS = 2_000;

/** The channel whose notes apply to a conversation. */
export function notesChannel(c: Conversation): string {
  return c.parentChannelId ?? c.channelId;
}

/** Channels whose notes (or their absence) one process keeps in memory on its own SQLite file. */
const CACHE_MAX = 10_000;
/** Invalidation topic of a channel's notes on PostgreSQL. */
const TOPIC = 'channel-note';

/**
 * On SQLite the file is this process's alone (sqlite-owner-lock.ts) and this object is the only
 * writer of the table, so what it read or wrote stays true: notes are read once per channel, not
 * on every model call. On PostgreSQL another instance may change them: with `invalidations` (the
 * instances tell each other of every change) the same cache is kept while those are heard, and
 * every get reads while they are not; without, every get reads.
 */
export function createChannelNotes(deps: { database: OpenedDatabase; clock: Clock; invalidations?: Invalidations }): ChannelNotes {
  const db = deps.database.db;
  const where = (c: Conversation) => ({ platform: c.platform, workspace_id: c.workspaceId, channel_id: notesChannel(c) });
  const local = deps.database.dialect === 'sqlite';
  const inv = local ? undefined : deps.invalidations;
  const cache = local || inv ? new Map<string, ChannelNote | null>() : undefined;
  const usable = () => local || (inv?.live() ?? false);
  inv?.on(TOPIC, (key) => (key === undefined ? cache?.clear() : cache?.delete(key)));
  // Bumped by every write, so a read that raced one does not cache what it saw before it.
  let writes = 0;
  const cacheKey = (k: ReturnType<typeof where>) => JSON.stringify([k.platform, k.workspace_id, k.channel_id]);
  const remember = (key: string, note: ChannelNote | null) => {
    if (!cache) return;
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(key, note);
  };
  return {
    async get(c) {
      const k = where(c);
      const key = cacheKey(k);
      const cached = usable() ? cache?.get(key) : undefined;
      if (cached !== undefined) return cached ?? undefined;
      const seen = writes;
      const gen = inv?.generation();
      const row = await db.selectFrom('hermes_channel_note').selectAll().where('platform', '=', k.platform).where('workspace_id', '=', k.workspace_id).where('channel_id', '=', k.channel_id).executeTakeFirst();
      const note = row ? { text: row.text, setBy: row.set_by, setAt: Number(row.set_at) } : undefined;
      if (seen === writes && (local || (inv?.live() && inv.generation() === gen))) remember(key, note ?? null);
      return note;
    },
    async set(c, text, by) {
      const row = { ...where(c), text: text.slice(0, MAX_CHANNEL_NOTE_CHARS), set_by: speakerKey(by), set_at: deps.clock.now() };
      const key = cacheKey(row);
      writes++;
      cache?.delete(key);
      const write = (tx: typeof db) =>
        tx
          .insertInto('hermes_channel_note')
          .values(row)
          .onConflict((oc) => oc.columns(['platform', 'workspace_id', 'channel_id']).doUpdateSet({ text: row.text, set_by: row.set_by, set_at: row.set_at }))
          .execute();
      if (inv) {
        // Every instance (this one too) drops what it kept once this commits; the next get reads.
        await db.transaction().execute(async (tx) => {
          await write(tx);
          await inv.sendIn(tx, TOPIC, key);
        });
        writes++;
        return;
      }
      await write(db);
      writes++;
      remember(key, { text: row.text, setBy: row.set_by, setAt: row.set_at });
    },
    async clear(c) {
      const k = where(c);
      const key = cacheKey(k);
      writes++;
      cache?.delete(key);
      const remove = (tx: typeof db) =>
        tx.deleteFrom('hermes_channel_note').where('platform', '=', k.platform).where('workspace_id', '=', k.workspace_id).where('channel_id', '=', k.channel_id).executeTakeFirst();
      if (inv) {
        const r = await db.transaction().execute(async (tx) => {
          const deleted = await remove(tx);
          await inv.sendIn(tx, TOPIC, key);
          return deleted;
        });
        writes++;
        return Number(r.numDeletedRows) > 0;
      }
      const r = await remove(db);
      writes++;
      remember(key, null);
      return Number(r.numDeletedRows) > 0;
    },
  };
}
