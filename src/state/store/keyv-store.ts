import type Keyv from 'keyv';
import type { Logger } from '../../basics/log.js';
import { StoreWriteError, type Store, type UpdateOptions } from './store.js';
import { createKeyedSerialiser } from './keyed-serialiser.js';

/** A read that failed (database gone, corrupt value). Never reported as "not found". */
export class StoreReadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreReadError';
  }
}

/**
 * Wraps any Keyv instance as a Store. Keyv swallows adapter errors by default (set() returns
 * false, get() returns undefined), which would make a full disk look like a missing key; this
 * wrapper turns both a thrown error and a false into StoreWriteError / StoreReadError.
 * The Keyv instance must be built with `throwOnErrors: true` so reads throw instead of missing.
 */
export function createKeyvStore(keyv: Keyv, log?: Logger, list?: (prefix: string) => string[]): Store {
  const serialiser = createKeyedSerialiser();
  let closed = false;

  keyv.on('error', (error: unknown) => {
    log?.error({ err: error }, 'store adapter error');
  });

  async function read<T>(key: string): Promise<T | undefined> {
    try {
      return (await keyv.get<T>(key)) ?? undefined;
    } catch (error) {
      throw new StoreReadError(`store read failed for key ${JSON.stringify(key)}: ${describe(error)}`, { cause: error });
    }
  }

  async function write(key: string, value: unknown, ttlMs?: number): Promise<void> {
    let ok: boolean;
    try {
      ok = await keyv.set(key, value, ttlMs);
    } catch (error) {
      throw new StoreWriteError(`store write failed for key ${JSON.stringify(key)}: ${describe(error)}`, { cause: error });
    }
    if (!ok) throw new StoreWriteError(`store write failed for key ${JSON.stringify(key)}: the adapter reported failure`);
  }

  return {
    get: read,

    set(key, value, ttlMs) {
      if (ttlMs !== undefined && !(ttlMs > 0)) {
        return Promise.reject(new StoreWriteError(`store write for key ${JSON.stringify(key)} has an invalid TTL: ${ttlMs}`));
      }
      return serialiser.run(key, () => write(key, value, ttlMs));
    },

    delete(key) {
      return serialiser.run(key, async () => {
        try {
          return await keyv.delete(key);
        } catch (error) {
          throw new StoreWriteError(`store delete failed for key ${JSON.stringify(key)}: ${describe(error)}`, { cause: error });
        }
      });
    },

    // One process owns a Keyv store (see sqlite-owner-lock.ts), so serialising here is atomic.
    update<T>(key: string, fn: (current: T | undefined) => T | undefined, opts?: UpdateOptions) {
      return serialiser.run(key, async () => {
        const before = await read<T>(key);
        const after = fn(before);
        if (after === undefined) return { before, after: before };
        await write(key, after, opts?.ttlMs);
        return { before, after };
      });
    },

    // One process owns a SQLite file (a second instance refuses to start), so serialising per key
    // here makes the read-add-write atomic for the whole deployment.
    increment(key, by, ttlMs) {
      if (!Number.isFinite(by)) return Promise.reject(new StoreWriteError(`store increment for key ${JSON.stringify(key)} has an invalid amount: ${by}`));
      return serialiser.run(key, async () => {
        let raw;
        try {
          raw = await keyv.getRaw<number>(key);
        } catch (error) {
          throw new StoreReadError(`store read failed for key ${JSON.stringify(key)}: ${describe(error)}`, { cause: error });
        }
        const now = Date.now();
        const live = raw !== undefined && (raw.expires === undefined || raw.expires === null || raw.expires > now);
        const current = live && typeof raw?.value === 'number' ? raw.value : 0;
        const total = current + by;
        const keepTtl = live && typeof raw?.expires === 'number' ? Math.max(1, raw.expires - now) : ttlMs;
        await write(key, total, keepTtl);
        return total;
      });
    },

    async keysWithPrefix(prefix) {
      if (!list) throw new StoreReadError('this store cannot list keys by prefix');
      try {
        return list(prefix);
      } catch (error) {
        throw new StoreReadError(`store listing failed for prefix ${JSON.stringify(prefix)}: ${describe(error)}`, { cause: error });
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      await serialiser.drain();
      await keyv.disconnect();
    },
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
