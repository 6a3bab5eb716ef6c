/**
 * The one persistence interface. Today it is Keyv on SQLite (sqlite-store.ts); HERMES_STORE_URL
 * can point another Keyv adapter at it later without anything above this file changing.
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

export interface Store {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown, ttlMs?: number): Promise<void>;
  delete(key: string): Promise<boolean>;
  /**
   * Read-modify-write, serialised per key inside this process. `fn` returns the new value, or
   * undefined to leave the key as it is. Returns the value before and after.
   */
  update<T>(key: string, fn: (current: T | undefined) => T | undefined): Promise<{ before: T | undefined; after: T | undefined }>;
  close(): Promise<void>;
}

/** Builds a key from parts, each URI-encoded so `:`, `_`, `%` and quotes in ids cannot collide. */
export function storeKey(...parts: string[]): string {
  return parts.map(encodeURIComponent).join(':');
}
