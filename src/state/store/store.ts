/**
 * The one persistence interface: Keyv on SQLite (sqlite-store.ts, one process) or PostgreSQL
 * (postgres-store.ts, several processes on one database). Nothing above this file knows which.
 *
 * Invariants every implementation keeps:
 * - a write that did not land throws StoreWriteError (Keyv itself returns false and moves on);
 * - there is no prefix/namespace delete: callers keep explicit key indexes, because the SQLite
 *   adapter's clear() matches namespaces with LIKE and `_`/`%` in an id would hit other users.
 */
export class StoreWriteError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreWriteError';
  }
}

/**
 * A notification that goes out with a write, exactly when it commits (PostgreSQL's NOTIFY on
 * `channel`), so other processes sharing the store can drop what they keep of the key
 * (src/state/cluster/invalidations.ts). A store one process has to itself (SQLite, memory) has no
 * one to tell and ignores it.
 */
export interface WriteNotice {
  channel: string;
  payload: string;
}

export interface UpdateOptions {
  /** The written value expires after this long (a claim that only needs to outlive retries). */
  ttlMs?: number;
  /** Sent in the write's transaction; nothing is sent when `fn` leaves the key as it is. */
  notice?: WriteNotice;
}

export interface DeleteOptions {
  /** Sent in the delete's transaction, whether or not the key was there. */
  notice?: WriteNotice;
}

export interface Store {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown, ttlMs?: number): Promise<void>;
  delete(key: string, opts?: DeleteOptions): Promise<boolean>;
  /**
   * Atomic read-modify-write: no other update or write of the key (in this process, or in another
   * one on a shared database) lands between the read and the write, so a compare-and-set built on
   * it succeeds for exactly one caller. `fn` returns the new value, or undefined to leave the key
   * as it is; it runs once, while the key is held. Returns the value before
   * and after. The written value has no TTL unless `opts.ttlMs` gives one.
   */
  update<T>(key: string, fn: (current: T | undefined) => T | undefined, opts?: UpdateOptions): Promise<{ before: T | undefined; after: T | undefined }>;
  /**
   * Adds `by` to the number stored at `key` (absent or expired = 0) and returns the new total,
   * atomically for every process sharing the store: usage counters and rate limits rely on no
   * increment ever being lost. `ttlMs` sets the expiry when the key is created; later increments
   * keep that expiry (so a window keyed by its start ends on time however busy it is).
   */
  increment(key: string, by: number, ttlMs?: number): Promise<number>;
  /**
   * Keys that start with `prefix` (compared exactly, no wildcards), in no particular order; may
   * include keys that expired and were not swept yet (a get() then finds nothing). For journals
   * that are listed only at recovery: one write per entry, and no index to keep in step with it.
   */
  keysWithPrefix(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}

/** Builds a key from parts, each URI-encoded so `:`, `_`, `%` and quotes in ids cannot collide. */
export function storeKey(...parts: string[]): string {
  return parts.map(encodeURIComponent).join(':');
}
