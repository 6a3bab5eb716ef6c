import { systemClock, type Clock } from '../../basics/clock.js';
import { StoreWriteError, type Store, type UpdateOptions } from './store.js';
import { createKeyedSerialiser } from './keyed-serialiser.js';

interface Entry {
  json: string;
  expiresAt?: number;
}

/**
 * An in-process Store for unit tests, with the SQLite store's semantics: values are copied
 * through JSON (a caller mutating what it read changes nothing stored), TTL expiry is checked on
 * read against the injected clock, and update() is serialised per key.
 */
export function createMemoryStore(clock: Clock = systemClock): Store {
  const entries = new Map<string, Entry>();
  const serialiser = createKeyedSerialiser();
  let closed = false;

  function read<T>(key: string): T | undefined {
    const entry = entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && clock.now() > entry.expiresAt) {
      entries.delete(key);
      return undefined;
    }
    return (JSON.parse(entry.json) as T | null) ?? undefined;
  }

  function write(key: string, value: unknown, ttlMs?: number): void {
    if (closed) throw new StoreWriteError(`store write failed for key ${JSON.stringify(key)}: the store is closed`);
    if (ttlMs !== undefined && !(ttlMs > 0)) {
      throw new StoreWriteError(`store write for key ${JSON.stringify(key)} has an invalid TTL: ${ttlMs}`);
    }
    const json = JSON.stringify(value ?? null);
    entries.set(key, ttlMs === undefined ? { json } : { json, expiresAt: clock.now() + ttlMs });
  }

  return {
    async get<T>(key: string) {
      return read<T>(key);
    },
    set(key, value, ttlMs) {
      return serialiser.run(key, async () => write(key, value, ttlMs));
    },
    delete(key) {
      return serialiser.run(key, async () => read(key) !== undefined && entries.delete(key));
    },
    update<T>(key: string, fn: (current: T | undefined) => T | undefined, opts?: UpdateOptions) {
      return serialiser.run(key, async () => {
        const before = read<T>(key);
        const after = fn(before);
        if (after === undefined) return { before, after: before };
        write(key, after, opts?.ttlMs);
        return { before, after };
      });
    },
    increment(key, by, ttlMs) {
      return serialiser.run(key, async () => {
        const current = read<number>(key); // drops an expired entry
        const kept = entries.get(key)?.expiresAt;
        const total = (typeof current === 'number' ? current : 0) + by;
        write(key, total, kept !== undefined ? Math.max(1, kept - clock.now()) : ttlMs);
        return total;
      });
    },
    async keysWithPrefix(prefix) {
      return [...entries.keys()].filter((k) => k.startsWith(prefix) && read(k) !== undefined);
    },
    async close() {
      closed = true;
      await serialiser.drain();
    },
  };
}
