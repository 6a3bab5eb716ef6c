/**
 * Runs async tasks one at a time per key, in call order; different keys run in parallel.
 * A read-modify-write that interleaves with another on the same key loses one of the writes,
 * so every writer of a key goes through here. Chains are dropped once they drain, so the map
 * only holds keys that are busy right now.
 */
export interface KeyedSerialiser {
  run<R>(key: string, task: () => Promise<R>): Promise<R>;
  /** Resolves when every task queued so far has settled. */
  drain(): Promise<void>;
}

export function createKeyedSerialiser(): KeyedSerialiser {
  const tails = new Map<string, Promise<void>>();

  return {
    run<R>(key: string, task: () => Promise<R>): Promise<R> {
      const previous = tails.get(key) ?? Promise.resolve();
      // A failed task must not block the ones after it: the tail always settles successfully.
      const result = previous.then(task);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    async drain(): Promise<void> {
      await Promise.all([...tails.values()]);
    },
  };
}
