import { randomInt } from 'node:crypto';
import type { Store } from './store.js';

/**
 * The index bookkeeping shared by stores that keep records plus explicit indexes on the plain
 * Store (which has no prefix scan): reminders and scheduled tasks. Every change is a
 * compare-and-set through Store.update, so two processes editing one index never lose an entry.
 *
 * Two index shapes: an id list (`owner` indexes: whose records are these) and a time list of
 * `[id, at]` kept sorted by `at` (due times, claims), so the earliest entry is always first.
 */
export type TimedEntry = [id: string, at: number];

const ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A short random id people can type: `prefix` then `length` letters and digits, no look-alikes. */
export function shortId(prefix: string, length: number): string {
  let id = prefix;
  for (let i = 0; i < length; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** `entries` with `entry` in its place by time (replacing an older entry of the same id). */
export function insertSorted(entries: TimedEntry[], entry: TimedEntry): TimedEntry[] {
  const out = entries.filter(([id]) => id !== entry[0]);
  let i = out.length;
  while (i > 0 && (out[i - 1] as TimedEntry)[1] > entry[1]) i--;
  out.splice(i, 0, entry);
  return out;
}

export interface RecordIndexes<R> {
  /** Compare-and-set of one record: `change` returns the new record, or undefined to leave it. */
  casRecord(key: string, change: (current: R) => R | undefined): Promise<R | undefined>;
  timed(key: string): Promise<TimedEntry[]>;
  putTimed(key: string, id: string, at: number): Promise<void>;
  removeTimed(key: string, ids: string[]): Promise<void>;
  ids(key: string): Promise<string[]>;
  removeIds(key: string, ids: string[]): Promise<void>;
}

export function recordIndexes<R>(store: Store): RecordIndexes<R> {
  return {
    async casRecord(key, change) {
      let applied: R | undefined;
      await store.update<R>(key, (cur) => (applied = cur === undefined ? undefined : change(cur)));
      return applied;
    },
    async timed(key) {
      return (await store.get<TimedEntry[]>(key)) ?? [];
    },
    async putTimed(key, id, at) {
      await store.update<TimedEntry[]>(key, (cur = []) => insertSorted(cur, [id, at]));
    },
    async removeTimed(key, ids) {
      if (ids.length === 0) return;
      await store.update<TimedEntry[]>(key, (cur) => (cur?.some(([id]) => ids.includes(id)) ? cur.filter(([id]) => !ids.includes(id)) : undefined));
    },
    async ids(key) {
      return (await store.get<string[]>(key)) ?? [];
    },
    async removeIds(key, ids) {
      if (ids.length === 0) return;
      await store.update<string[]>(key, (cur) => (cur?.some((id) => ids.includes(id)) ? cur.filter((id) => !ids.includes(id)) : undefined));
    },
  };
}
