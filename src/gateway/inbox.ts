import type { Store } from '../state/store/store.js';
import { storeKey } from '../state/store/store.js';
import type { InboundMessage } from '../basics/types.js';

/**
 * Accepted messages are written here before the platform is acknowledged, and removed when their
 * turn ends. After a crash, `pending()` lists them; whether a turn had started is read from the
 * session (its user message carries the inbound id), so starting costs no extra write.
 *
 * Entries are found by their key prefix, so accepting a message is one write. Earlier versions
 * also kept an index key listing them; its entries have the same keys, so they are found all the same.
 */
export interface InboxEntry {
  message: InboundMessage;
  receivedAt: number;
}

const PREFIX = 'inbox:';
const LEGACY_INDEX = 'inbox:index';

export function createInbox(store: Store) {
  const key = (id: string) => storeKey('inbox', id);
  return {
    async add(message: InboundMessage): Promise<void> {
      await store.set(key(message.id), { message, receivedAt: Date.now() } satisfies InboxEntry);
    },
    async done(id: string): Promise<void> {
      await store.delete(key(id));
    },
    async pending(): Promise<InboxEntry[]> {
      const out: InboxEntry[] = [];
      for (const k of await store.keysWithPrefix(PREFIX)) {
        if (k === LEGACY_INDEX) continue;
        const e = await store.get<InboxEntry>(k);
        if (e) out.push(e);
      }
      await store.delete(LEGACY_INDEX);
      return out.sort((a, b) => a.receivedAt - b.receivedAt);
    },
  };
}
