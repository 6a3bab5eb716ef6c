import type { Store } from '../state/store/store.js';
import { storeKey } from '../state/store/store.js';

/**
 * What a platform was told we received is on disk first. An adapter writes each accepted request
 * body here BEFORE it acknowledges it — one store write, the only one before the ack — and
 * deletes it once the gateway holds the message or decision durably (inbox, decision) or it
 * needed nothing. After a crash, `pending()` lists the bodies acknowledged but not yet handed
 * over; the adapter replays them, and the gateway's own dedupe (event ids, the approval
 * compare-and-set) keeps a replay from acting twice.
 *
 * Entries are found by their key prefix. Earlier versions also kept an index key listing them,
 * rewritten twice per request; its entries have the same keys, so they are found all the same.
 */
export interface Receipt {
  id: string;
  body: unknown;
  receivedAt: number;
}

export interface ReceiptJournal {
  add(id: string, body: unknown): Promise<void>;
  done(id: string): Promise<void>;
  pending(): Promise<Receipt[]>;
}

export function createReceiptJournal(store: Store, platform: string, now: () => number = Date.now): ReceiptJournal {
  const key = (id: string) => storeKey('receipt', platform, id);
  const prefix = `${storeKey('receipt', platform)}:`;
  const legacyIndex = storeKey('receipt', platform, 'index');
  return {
    async add(id, body) {
      await store.set(key(id), { id, body, receivedAt: now() } satisfies Receipt);
    },
    async done(id) {
      await store.delete(key(id));
    },
    async pending() {
      const out: Receipt[] = [];
      for (const k of await store.keysWithPrefix(prefix)) {
        if (k === legacyIndex) continue;
        const r = await store.get<Receipt>(k);
        if (r) out.push(r);
      }
      await store.delete(legacyIndex);
      return out.sort((a, b) => a.receivedAt - b.receivedAt);
    },
  };
}
