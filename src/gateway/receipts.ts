import type { Store } from '../store/store.js';
import { storeKey } from '../store/store.js';
import { createBatchedSet } from '../store/batched-set.js';

/**
 * What a platform was told we received is on disk first. An adapter writes each accepted request
 * body here BEFORE it acknowledges it (one store write, milliseconds), and marks it done once the
 * gateway holds it durably (inbox, decision) or it needed nothing. After a crash, `pending()`
 * lists the bodies acknowledged but not yet handed over; the adapter replays them, and the
 * gateway's own dedupe (event ids, the approval compare-and-set) keeps a replay from acting twice.
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
  const index = createBatchedSet(store, storeKey('receipt', platform, 'index'), 10_000);
  return {
    async add(id, body) {
      await store.set(key(id), { id, body, receivedAt: now() } satisfies Receipt);
      await index.add(id);
    },
    async done(id) {
      await store.delete(key(id));
      await index.remove(id);
    },
    async pending() {
      const out: Receipt[] = [];
      for (const id of await index.list()) {
        const r = await store.get<Receipt>(key(id));
        if (r) out.push(r);
      }
      return out.sort((a, b) => a.receivedAt - b.receivedAt);
    },
  };
}
