import type { Store, UpdateOptions } from './store.js';
import { createKeyedSerialiser } from './keyed-serialiser.js';

interface Entry {
  /** JSON of the value, or undefined for a key known to be absent. */
  json: string | undefined;
  expiresAt?: number;
}

/**
 * A read cache in front of the durable store, for SQLite only: one process owns that store (the
 * owner lock refuses a second), and every write goes through here, so the cache is always what the
 * store holds. PostgreSQL is shared by several instances and is never cached. Reads skip the
 * SQLite round trip, writes still wait until the store has them (durability is unchanged).
 *
 * Values are kept as JSON and parsed on every read, so a caller that mutates what it read changes
 * nothing cached (the same copy semantics as the store). Bounded by entry count (least recently
 * used first out); absent keys are cached too, since many lookups are "is it there yet?".
 */
export function createCachedStore(inner: Store, opts: { maxEntries?: number; now?: () => number } = {}): Store {
  const maxEntries = opts.maxEntries ?? 20_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, Entry>();
  const serialiser = createKeyedSerialiser();
  /** Bumped when an increment starts and when it ends, so a read overlapping one does not cache the value from before it. */
  let incrementsDone = 0;

  const remember = (key: string, entry: Entry): void => {
    cache.delete(key);
    cache.set(key, entry);
    if (cache.size > maxEntries) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
  };

  const parse = <T>(json: string | undefined): T | undefined => (json === undefined ? undefined : ((JSON.parse(json) as T | null) ?? undefined));

  async function read<T>(key: string): Promise<T | undefined> {
    const hit = cache.get(key);
    if (hit && (hit.expiresAt === undefined || now() <= hit.expiresAt)) {
      cache.delete(key);
      cache.set(key, hit);
      return parse<T>(hit.json);
    }
    const increments = incrementsDone;
    const value = await inner.get<T>(key);
    // A write that started meanwhile owns the entry; only fill the cache when nothing did. An
    // increment leaves no entry behind, so a read that overlapped one must not fill it either.
    if ((!cache.has(key) || cache.get(key) === hit) && increments === incrementsDone) remember(key, { json: value === undefined ? undefined : JSON.stringify(value) });
    return value;
  }

  async function write(key: string, value: unknown, ttlMs?: number): Promise<void> {
    cache.delete(key); // a failed write must not leave a stale entry behind
    await inner.set(key, value, ttlMs);
    remember(key, { json: JSON.stringify(value ?? null), expiresAt: ttlMs === undefined ? undefined : now() + ttlMs });
  }

  return {
    get: read,
    set: (key, value, ttlMs) => serialiser.run(key, () => write(key, value, ttlMs)),
    delete: (key) =>
      serialiser.run(key, async () => {
        const known = cache.get(key);
        if (known && known.json === undefined) return false; // known to be absent: no round trip
        cache.delete(key);
        const existed = await inner.delete(key);
        remember(key, { json: undefined });
        return existed;
      }),
    update: <T>(key: string, fn: (current: T | undefined) => T | undefined, opts?: UpdateOptions) =>
      serialiser.run(key, async () => {
        const before = await read<T>(key);
        const after = fn(before);
        if (after === undefined) return { before, after: before };
        await write(key, after, opts?.ttlMs);
        return { before, after };
      }),
    // Counters are not cached: the expiry lives in the store, and reading one is rare next to adding.
    increment: (key, by, ttlMs) =>
      serialiser.run(key, async () => {
        incrementsDone += 1;
        cache.delete(key);
        try {
          return await inner.increment(key, by, ttlMs);
        } finally {
          // A read that ran while the increment was in flight may have cached the old count.
          cache.delete(key);
          incrementsDone += 1;
        }
      }),
    // Every write has reached the inner store before it resolved, so the inner store's list is complete.
    keysWithPrefix: (prefix) => inner.keysWithPrefix(prefix),
    async close() {
      await serialiser.drain();
      cache.clear();
      await inner.close();
    },
  };
}
