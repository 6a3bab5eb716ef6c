import type { Store } from '../store/store.js';
import { storeKey } from '../store/store.js';
import type { InboundMessage } from '../types.js';

/**
 * Accepted messages are written here before the platform is acknowledged, and removed when their
 * turn ends. After a crash, `pending()` tells which never started (run them) and which were cut
 * off mid-turn (tell the user rather than repeat side effects).
 */
export interface InboxEntry {
  message: InboundMessage;
  started: boolean;
  receivedAt: number;
}

const INDEX = 'inbox:index';
const MAX_INDEX = 10_000;

export function createInbox(store: Store) {
  const key = (id: string) => storeKey('inbox', id);
  return {
    async add(message: InboundMessage): Promise<void> {
      await store.set(key(message.id), { message, started: false, receivedAt: Date.now() } satisfies InboxEntry);
      await store.update<string[]>(INDEX, (ids = []) => (ids.includes(message.id) ? ids : [...ids, message.id].slice(-MAX_INDEX)));
    },
    async markStarted(id: string): Promise<void> {
      await store.update<InboxEntry>(key(id), (e) => (e ? { ...e, started: true } : undefined));
    },
    async done(id: string): Promise<void> {
      await store.delete(key(id));
      await store.update<string[]>(INDEX, (ids = []) => ids.filter((x) => x !== id));
    },
    async pending(): Promise<InboxEntry[]> {
      const ids = (await store.get<string[]>(INDEX)) ?? [];
      const out: InboxEntry[] = [];
      for (const id of ids) {
        const e = await store.get<InboxEntry>(key(id));
        if (e) out.push(e);
      }
      return out.sort((a, b) => a.receivedAt - b.receivedAt);
    },
  };
}
