import type { DbOrTx } from '../store/database.js';
import type { WriteNotice } from '../store/store.js';

/**
 * What one instance keeps in memory about shared PostgreSQL rows, told when another instance (or
 * this one) changed them: a notification on the work channel (pg-work-queue.ts), so a cache is
 * trusted only while that channel is heard. A cache reads through it like this:
 *
 *   const gen = inv.generation();
 *   const value = await readTheRow();
 *   if (inv.live() && inv.generation() === gen) cache.set(key, value);
 *
 * A change heard while the read ran (or the connection lost and back) bumps the generation, so a
 * value read before a change is never kept after it. A writer calls sendIn() in the transaction
 * that writes, so the notification goes out exactly when the change commits (and never without
 * it); instances reading in between drop what they kept when it arrives, as with any read that
 * races a write.
 */
export interface Invalidations {
  /** Whether notifications are heard now; false while the LISTEN connection is down (caches must not be used). */
  live(): boolean;
  /** Bumped by every invalidation heard and by every loss or return of the connection. */
  generation(): number;
  /** `fn(key)` for each invalidation of `topic` heard; `fn(undefined)`: drop everything (the connection was lost or came back). */
  on(topic: string, fn: (key: string | undefined) => void): void;
  /** Tells every instance, this one included, that `key` of `topic` changed, when `tx` commits. */
  sendIn(tx: DbOrTx, topic: string, key: string): Promise<void>;
  /** The same notification for a writer outside Kysely (the key-value store's UpdateOptions.notice), sent in its write's transaction. */
  notice(topic: string, key: string): WriteNotice;
}
