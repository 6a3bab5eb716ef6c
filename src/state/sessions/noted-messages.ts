import type { ContextMessage } from '../../basics/ports.js';
import type { OpenedDatabase } from '../store/database.js';

/**
 * Messages of a joined thread that were not addressed to the bot, kept for its next turn there
 * (`hermes_noted_message`, one row per message; the newest `limit` per conversation are kept).
 * Rows leave when a turn took them into its session, or when they were deleted on the platform.
 *
 * On SQLite the file is this process's alone, so it knows which conversations have any: the
 * others are answered without a statement (every turn asks). On PostgreSQL other instances note
 * messages too, and every ask is a query.
 */
export interface NotedMessages {
  add(conversation: string, message: ContextMessage, limit: number): Promise<void>;
  /** Oldest first. */
  list(conversation: string): Promise<ContextMessage[]>;
  remove(conversation: string, ids: readonly string[]): Promise<void>;
  /** A noted message edited (`text`) or deleted (null) on the platform; nothing when it is not noted. */
  revise(conversation: string, id: string, text: string | null): Promise<void>;
}

export function createNotedMessages(database: OpenedDatabase): NotedMessages {
  const { db } = database;
  /**
   * SQLite: the conversations that may have rows, each with a count of our adds (loaded once, then
   * kept in step with our own writes; a list that found none forgets it only if no add came between).
   */
  let known: Promise<Map<string, number>> | undefined;
  const knownSet = () =>
    (known ??= db
      .selectFrom('hermes_noted_message')
      .select('conversation')
      .distinct()
      .execute()
      .then((rows) => new Map(rows.map((r) => [r.conversation, 0])))
      .catch((err: unknown) => {
        known = undefined;
        throw err;
      }));
  const local = database.dialect === 'sqlite';

  return {
    async add(conversation, m, limit) {
      const row = { conversation, id: m.id, at: m.at, body: JSON.stringify(m) };
      if (local) {
        const set = await knownSet();
        set.set(conversation, (set.get(conversation) ?? 0) + 1);
      }
      await db.transaction().execute(async (tx) => {
        await tx.insertInto('hermes_noted_message').values(row).onConflict((c) => c.columns(['conversation', 'id']).doUpdateSet({ at: row.at, body: row.body })).execute();
        // Only the newest `limit` are kept.
        const keep = tx.selectFrom('hermes_noted_message').select('id').where('conversation', '=', conversation).orderBy('at', 'desc').orderBy('id', 'desc').limit(Math.max(1, limit));
        await tx.deleteFrom('hermes_noted_message').where('conversation', '=', conversation).where('id', 'not in', keep).execute();
      });
    },
    async list(conversation) {
      const set = local ? await knownSet() : undefined;
      const adds = set?.get(conversation);
      if (set && adds === undefined) return [];
      const rows = await db.selectFrom('hermes_noted_message').select('body').where('conversation', '=', conversation).orderBy('at').orderBy('id').execute();
      if (set && rows.length === 0 && set.get(conversation) === adds) set.delete(conversation);
      return rows.map((r) => JSON.parse(r.body) as ContextMessage);
    },
    async remove(conversation, ids) {
      if (ids.length === 0) return;
      await db.deleteFrom('hermes_noted_message').where('conversation', '=', conversation).where('id', 'in', [...ids]).execute();
    },
    async revise(conversation, id, text) {
      if (local && !(await knownSet()).has(conversation)) return;
      if (text === null) {
        await db.deleteFrom('hermes_noted_message').where('conversation', '=', conversation).where('id', '=', id).execute();
        return;
      }
      await db.transaction().execute(async (tx) => {
        const row = await tx.selectFrom('hermes_noted_message').select('body').where('conversation', '=', conversation).where('id', '=', id).$if(database.dialect === 'postgres', (q) => q.forUpdate()).executeTakeFirst();
        if (!row) return;
        const body = JSON.stringify({ ...(JSON.parse(row.body) as ContextMessage), text, edited: true });
        await tx.updateTable('hermes_noted_message').set({ body }).where('conversation', '=', conversation).where('id', '=', id).execute();
      });
    },
  };
}
