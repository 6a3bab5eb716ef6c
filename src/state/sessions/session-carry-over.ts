import type { ChatMessage } from '../../basics/types.js';
import type { OpenedDatabase } from '../store/database.js';
import type { Store } from '../store/store.js';

/**
 * Round 2 kept sessions as key-value records: `session:meta:<id>` (the record), its history in
 * pages of 32 (`session:page:<id>:<n>`, the last one named by `session:head:<id>`), and per
 * conversation `session:current:<key>`, `session:archived:<key>` (ids, oldest first) and
 * `session:joined:<key>`. This moves them into the session tables, once: each session with its
 * history in one transaction, then its keys are deleted. A crash in between moves it again and
 * the rows already there are kept as they are (inserts that find a row do nothing).
 *
 * The time a session was archived was not recorded in round 2; archived sessions get their
 * position in the old list (1, 2, …) as `archived_at`, which keeps archived() in the same order.
 */
interface OldSession {
  id: string;
  conversationKey: string;
  createdAt: number;
  summary?: string;
  summarizedUpTo?: number;
}

const PAGE_SIZE = 32;

const part = (key: string, index: number) => decodeURIComponent(key.split(':')[index] ?? '');
const enc = encodeURIComponent;

export async function moveRound2Sessions(store: Store, database: OpenedDatabase): Promise<{ sessions: number; messages: number; conversations: number }> {
  const { db } = database;
  let sessions = 0;
  let messages = 0;
  let conversations = 0;

  for (const key of await store.keysWithPrefix('session:meta:')) {
    const meta = await store.get<OldSession>(key);
    if (meta && typeof meta.id === 'string' && typeof meta.conversationKey === 'string') {
      const head = (await store.get<number>(`session:head:${enc(meta.id)}`)) ?? 0;
      const history: ChatMessage[] = [];
      for (let page = 0; page <= head; page++) {
        const items = await store.get<ChatMessage[]>(`session:page:${enc(meta.id)}:${page}`);
        // Round 2 read a missing page as an error; here the history stops at the first gap.
        if (!Array.isArray(items)) break;
        history.push(...items.slice(0, PAGE_SIZE));
      }
      const added = await db.transaction().execute(async (tx) => {
        const r = await tx
          .insertInto('hermes_session')
          .values({ id: meta.id, conversation_key: meta.conversationKey, created_at: Number(meta.createdAt) || 0, summary: meta.summary ?? null, summarized_up_to: Math.min(meta.summarizedUpTo ?? 0, history.length), archived_at: null })
          .onConflict((c) => c.column('id').doNothing())
          .executeTakeFirst();
        if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) return undefined;
        for (let i = 0; i < history.length; i += 200) {
          await tx
            .insertInto('hermes_message')
            .values(history.slice(i, i + 200).map((m, k) => ({ session_id: meta.id, seq: i + k, body: JSON.stringify(m) })))
            .onConflict((c) => c.columns(['session_id', 'seq']).doNothing())
            .execute();
        }
        return history.length;
      });
      if (added !== undefined) {
        sessions++;
        messages += added;
      }
      for (let page = 0; page <= head + 1; page++) await store.delete(`session:page:${enc(meta.id)}:${page}`);
      await store.delete(`session:head:${enc(meta.id)}`);
    }
    await store.delete(key);
  }

  for (const key of await store.keysWithPrefix('session:current:')) {
    const convKey = part(key, 2);
    const id = await store.get<string>(key);
    if (typeof id === 'string' && convKey) {
      const r = await db
        .insertInto('hermes_conversation')
        .values({ key: convKey, current_session: id, joined: 0 })
        .onConflict((c) => c.column('key').doUpdateSet({ current_session: id }).where('hermes_conversation.current_session', 'is', null))
        .executeTakeFirst();
      if (Number(r.numInsertedOrUpdatedRows ?? 0n) > 0) conversations++;
    }
    await store.delete(key);
  }

  for (const key of await store.keysWithPrefix('session:archived:')) {
    const ids = await store.get<string[]>(key);
    if (Array.isArray(ids)) {
      for (const [i, id] of ids.entries()) {
        await db.updateTable('hermes_session').set({ archived_at: i + 1 }).where('id', '=', id).where('archived_at', 'is', null).execute();
      }
    }
    await store.delete(key);
  }

  for (const key of await store.keysWithPrefix('session:joined:')) {
    const convKey = part(key, 2);
    if (convKey && (await store.get<boolean>(key)) === true) {
      await db
        .insertInto('hermes_conversation')
        .values({ key: convKey, current_session: null, joined: 1 })
        .onConflict((c) => c.column('key').doUpdateSet({ joined: 1 }))
        .execute();
    }
    await store.delete(key);
  }
  return { sessions, messages, conversations };
}
