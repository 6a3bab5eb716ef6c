import type { Store } from '../store/store.js';
import { storeKey } from '../store/store.js';
import { createBatchedSet } from '../store/batched-set.js';
import type { InboundMessage } from '../types.js';

/**
 * Accepted messages are written here before the platform is acknowledged, and removed when their
 * turn ends. After a crash, `pending()` lists them; whether a turn had started is read from the
 * session (its user message carries the inbound id), so starting costs no extra write.
 */
export interface InboxEntry {
  message: InboundMessage;
  receivedAt: number;
}

const MAX_INDEX = 10_000;

export function createInbox(store: Store) {
  const key = (id: string) => storeKey('inbox', id);
  const index = createBatchedSet(store, 'inbox:index', MAX_INDEX);
  return {
    async add(message: InboundMessage): Promise<void> {
      await store.set(key(message.id), { message, receivedAt: Date.now() } satisfies InboxEntry);
      await index.add(message.id);
    },
    async done(id: string): Promise<void> {
      await store.delete(key(id));
      await index.remove(id);
    },
    async pending(): Promise<InboxEntry[]> {
      const out: InboxEntry[] = [];
      for (const id of await index.list()) {
        const e = await store.get<InboxEntry>(key(id));
        if (e) out.push(e);
      }
      return out.sort((a, b) => a.receivedAt - b.receivedAt);
    },
  };
}
