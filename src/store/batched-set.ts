import type { Store } from './store.js';

/**
 * A durable set of ids under one store key, written in batches: while one write is in flight,
 * further adds and removes gather and go out together in the next. A caller's promise resolves
 * only once a write containing its change has landed, so durability is per call, while 500
 * messages arriving at once cost a handful of writes instead of 1,000 serialised ones.
 */
export interface BatchedSet {
  add(id: string): Promise<void>;
  remove(id: string): Promise<void>;
  list(): Promise<string[]>;
}

export function createBatchedSet(store: Store, key: string, maxSize = 10_000): BatchedSet {
  let adds = new Set<string>();
  let removes = new Set<string>();
  let waiters: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  let writing = false;

  async function drain(): Promise<void> {
    writing = true;
    try {
      // Bounded: each round takes everything queued so far; new calls during a round wait for the next.
      while (waiters.length > 0) {
        const batch = waiters;
        const toAdd = adds;
        const toRemove = removes;
        waiters = [];
        adds = new Set();
        removes = new Set();
        try {
          await store.update<string[]>(key, (ids = []) => {
            const next = new Set(ids);
            for (const id of toAdd) next.add(id);
            for (const id of toRemove) next.delete(id);
            return [...next].slice(-maxSize);
          });
          for (const w of batch) w.resolve();
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      writing = false;
    }
  }

  function schedule(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }));
    if (!writing) void drain();
    return done;
  }

  return {
    add(id) {
      removes.delete(id);
      adds.add(id);
      return schedule();
    },
    remove(id) {
      adds.delete(id);
      removes.add(id);
      return schedule();
    },
    async list() {
      return (await store.get<string[]>(key)) ?? [];
    },
  };
}
