import { randomBytes } from 'node:crypto';
import type { Clock } from '../../basics/clock.js';
import { conversationKey, type ChatMessage, type Conversation } from '../../basics/types.js';
import { storeKey, type Store } from '../store/store.js';
import { createKeyedSerialiser } from '../store/keyed-serialiser.js';

export interface SessionRecord {
  id: string;
  conversationKey: string;
  createdAt: number;
  summary?: string;
  /** Count of history messages covered by `summary`. */
  summarizedUpTo: number;
}

export interface SessionStore {
  /** The conversation's live session; the first one is created lazily. */
  current(conversation: Conversation): Promise<SessionRecord>;
  /** The live session under a key of its own (a scheduled task's runs), created lazily. */
  currentByKey(key: string): Promise<SessionRecord>;
  get(sessionId: string): Promise<SessionRecord | undefined>;
  /** Archives the current session (kept, listed by archived()) and starts one with a new id. */
  startNew(conversation: Conversation): Promise<SessionRecord>;
  /** Messages in order; `from` skips the first `from` (e.g. those already in the summary). */
  history(sessionId: string, from?: number): Promise<ChatMessage[]>;
  /** Append-only; one call costs the same however long the history already is. */
  append(sessionId: string, messages: ChatMessage[]): Promise<void>;
  setSummary(sessionId: string, summary: string, summarizedUpTo: number): Promise<void>;
  /** Old session ids of this conversation, oldest first. */
  archived(conversation: Conversation): Promise<string[]>;
  /** The bot took part in this thread, so it answers there without a mention (persisted). */
  markJoined(conversation: Conversation): Promise<void>;
  isJoined(conversation: Conversation): Promise<boolean>;
  /** Durable dedupe of inbound platform messages: true only the first time an id is claimed. */
  claimInbound(platform: string, messageId: string): Promise<boolean>;
}

/**
 * History is kept in fixed-size pages plus a pointer to the last page, so an append rewrites at
 * most the last page, never the whole history. Writing one page is atomic, so the last page's
 * length is the count within it; the pointer only moves when a new page starts, and it is
 * written after the pages, as the commit point for them: a crash in between leaves a page past
 * the pointer that readers ignore and the next append overwrites. One write per ordinary append.
 */
export const HISTORY_PAGE_SIZE = 32;
const INBOUND_TTL_MS = 24 * 60 * 60 * 1000;

const keys = {
  current: (convKey: string) => storeKey('session', 'current', convKey),
  archived: (convKey: string) => storeKey('session', 'archived', convKey),
  joined: (convKey: string) => storeKey('session', 'joined', convKey),
  meta: (sessionId: string) => storeKey('session', 'meta', sessionId),
  head: (sessionId: string) => storeKey('session', 'head', sessionId),
  page: (sessionId: string, page: number) => storeKey('session', 'page', sessionId, String(page)),
  inbound: (platform: string, messageId: string) => storeKey('inbound', platform, messageId),
};

export function createSessionStore(store: Store, clock: Clock): SessionStore {
  // Several store keys change together (pointer + archive list, pages + count), so the unit of
  // serialisation is the conversation or the session, not a single key.
  const locks = createKeyedSerialiser();

  /**
   * Makes a new session the conversation's current one. With `replacing`, only if the pointer
   * still names that id (or nothing): another instance on a shared store may have created one
   * meanwhile, and then both must use the same session. The meta row is written first, so the
   * pointer never names a session without one.
   */
  async function createSession(convKey: string, replacing: string | undefined, force: boolean): Promise<SessionRecord> {
    const record: SessionRecord = {
      id: `${convKey}#${clock.now().toString(36)}-${randomBytes(6).toString('base64url')}`,
      conversationKey: convKey,
      createdAt: clock.now(),
      summarizedUpTo: 0,
    };
    await store.set(keys.meta(record.id), record);
    const { after } = await store.update<string>(keys.current(convKey), (cur) => (force || cur === undefined || cur === replacing ? record.id : undefined));
    if (after === record.id || after === undefined) return record;
    return (await store.get<SessionRecord>(keys.meta(after))) ?? record;
  }

  async function currentLocked(convKey: string): Promise<SessionRecord> {
    const id = await store.get<string>(keys.current(convKey));
    if (id !== undefined) {
      const record = await store.get<SessionRecord>(keys.meta(id));
      if (record) return record;
    }
    return createSession(convKey, id, false);
  }

  /** Index of the last page and the messages in it ([] for a new session). */
  async function lastPage(sessionId: string): Promise<{ page: number; messages: ChatMessage[] }> {
    const page = (await store.get<number>(keys.head(sessionId))) ?? 0;
    const messages = (await store.get<ChatMessage[]>(keys.page(sessionId, page))) ?? [];
    return { page, messages };
  }

  async function messageCount(sessionId: string): Promise<number> {
    const { page, messages } = await lastPage(sessionId);
    return page * HISTORY_PAGE_SIZE + messages.length;
  }

  async function readPage(sessionId: string, page: number): Promise<ChatMessage[]> {
    const messages = await store.get<ChatMessage[]>(keys.page(sessionId, page));
    if (!messages) throw new Error(`session ${sessionId}: history page ${page} is missing from the store`);
    return messages;
  }

  return {
    current(conversation) {
      const convKey = conversationKey(conversation);
      return locks.run(`conv:${convKey}`, () => currentLocked(convKey));
    },

    currentByKey(key) {
      return locks.run(`conv:${key}`, () => currentLocked(key));
    },

    get(sessionId) {
      return store.get<SessionRecord>(keys.meta(sessionId));
    },

    startNew(conversation) {
      const convKey = conversationKey(conversation);
      return locks.run(`conv:${convKey}`, async () => {
        const oldId = await store.get<string>(keys.current(convKey));
        if (oldId !== undefined) {
          await store.update<string[]>(keys.archived(convKey), (list) =>
            list?.includes(oldId) ? undefined : [...(list ?? []), oldId],
          );
        }
        return createSession(convKey, oldId, true);
      });
    },

    async history(sessionId, from = 0) {
      const count = await messageCount(sessionId);
      const start = Math.max(0, Math.min(Math.floor(from), count));
      if (start >= count) return [];
      const firstPage = Math.floor(start / HISTORY_PAGE_SIZE);
      const lastPage = Math.floor((count - 1) / HISTORY_PAGE_SIZE);
      const pages = await Promise.all(
        Array.from({ length: lastPage - firstPage + 1 }, (_, i) => readPage(sessionId, firstPage + i)),
      );
      const offset = firstPage * HISTORY_PAGE_SIZE;
      return pages.flat().slice(start - offset, count - offset);
    },

    append(sessionId, messages) {
      if (messages.length === 0) return Promise.resolve();
      return locks.run(`session:${sessionId}`, async () => {
        const last = await lastPage(sessionId);
        let page = last.page;
        let buffer = last.messages;
        if (buffer.length >= HISTORY_PAGE_SIZE) {
          page += 1;
          buffer = [];
        }
        let rest = messages;
        for (;;) {
          const room = HISTORY_PAGE_SIZE - buffer.length;
          buffer = [...buffer, ...rest.slice(0, room)];
          rest = rest.slice(room);
          await store.set(keys.page(sessionId, page), buffer);
          if (rest.length === 0) break;
          page += 1;
          buffer = [];
        }
        if (page !== last.page) await store.set(keys.head(sessionId), page);
      });
    },

    async setSummary(sessionId, summary, summarizedUpTo) {
      const { after } = await store.update<SessionRecord>(keys.meta(sessionId), (record) =>
        record ? { ...record, summary, summarizedUpTo } : undefined,
      );
      if (!after) throw new Error(`session ${sessionId} does not exist, so its summary cannot be set`);
    },

    async archived(conversation) {
      return (await store.get<string[]>(keys.archived(conversationKey(conversation)))) ?? [];
    },

    async markJoined(conversation) {
      const key = keys.joined(conversationKey(conversation));
      // Called for every answer in a thread; a read (usually cached) saves a write each time.
      if ((await store.get<boolean>(key)) !== true) await store.set(key, true);
    },

    async isJoined(conversation) {
      return (await store.get<boolean>(keys.joined(conversationKey(conversation)))) === true;
    },

    async claimInbound(platform, messageId) {
      // One atomic compare-and-set: on a shared database, a retry that reached another instance
      // at the same moment loses here, so the event is answered once.
      const now = clock.now();
      const { before } = await store.update<number>(keys.inbound(platform, messageId), (seen) => (seen === undefined ? now : undefined), { ttlMs: INBOUND_TTL_MS });
      return before === undefined;
    },
  };
}
