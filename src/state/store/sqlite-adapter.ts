import { EventEmitter } from 'node:events';
import Database from 'better-sqlite3';
import type { KeyvStoreAdapter, StoredData } from 'keyv';
import { commitOpenWrites } from './sqlite-group-commit.js';

/** A write waiting for the next group commit; `value` undefined is a delete. */
interface PendingWrite {
  key: string;
  value: string | undefined;
  resolve(changed: boolean): void;
  reject(err: unknown): void;
  result?: boolean;
  error?: unknown;
}

/**
 * Keyv's storage adapter on better-sqlite3, with the table @keyv/sqlite used (`keyv(key, value)`),
 * so existing store files open unchanged.
 *
 * Why not @keyv/sqlite: on node-sqlite3 every call parsed its SQL again and went through the libuv
 * thread pool, about 0.4 ms of CPU per write, and all calls queued on one connection — under 500
 * busy sessions a Slack acknowledgement waited behind every other store call. Here statements are
 * prepared once and run synchronously on the calling thread: a write is a few tens of
 * microseconds, and the write that makes a delivery durable runs the moment it is asked for.
 * The price: while another connection holds the write lock (an operator's open transaction),
 * a write blocks this thread for up to `busyTimeoutMs` before failing with SQLITE_BUSY.
 *
 * Group commit: writes asked for during one turn of the event loop are committed together, in one
 * transaction, when that turn ends (setImmediate), and each caller's promise settles only after the
 * commit — so "resolved" still means "on disk" (the ack-after-durable rule holds). A commit costs
 * far more than the rows in it (WAL frames, page header, the lock), so under load — hundreds of
 * sessions writing in the same turn — a write costs a third of what one transaction per write did.
 * Reads see committed rows only: a write is visible once its promise has resolved. When a batch
 * fails (SQLITE_FULL, a busy lock), each of its writes is tried again on its own, so one bad write
 * never takes the others down with it.
 */
export class SqliteKeyvAdapter extends EventEmitter implements KeyvStoreAdapter {
  readonly opts: { dialect: 'sqlite'; file: string };
  namespace?: string;
  readonly db: Database.Database;
  private readonly select: Database.Statement<[string], string>;
  private readonly upsert: Database.Statement<[string, string]>;
  private readonly remove: Database.Statement<[string]>;
  private readonly range: Database.Statement<[string, string], string>;
  private readonly commitBatch: (ops: PendingWrite[]) => void;
  private pending: PendingWrite[] = [];
  /** Commits made and the writes they held: how much group commit merged (tests, diagnostics). */
  readonly stats = { commits: 0, writes: 0 };
  private flushing: NodeJS.Immediate | undefined;

  /** Opens (or creates) the file; throws if it cannot be opened. */
  constructor(file: string, opts: { busyTimeoutMs: number }) {
    super();
    this.opts = { dialect: 'sqlite', file };
    this.db = new Database(file, { timeout: opts.busyTimeoutMs });
    this.db.exec('CREATE TABLE IF NOT EXISTS keyv(key VARCHAR(255) PRIMARY KEY, value TEXT )');
    this.select = this.db.prepare<[string], string>('SELECT value FROM keyv WHERE key = ?').pluck();
    this.upsert = this.db.prepare<[string, string]>('INSERT INTO keyv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    this.remove = this.db.prepare<[string]>('DELETE FROM keyv WHERE key = ?');
    this.range = this.db.prepare<[string, string], string>('SELECT key FROM keyv WHERE key >= ? AND key < ?').pluck();
    this.commitBatch = this.db.transaction((ops: PendingWrite[]) => {
      for (const op of ops) op.result = this.apply(op);
    });
  }

  private apply(op: PendingWrite): boolean {
    if (op.value === undefined) return this.remove.run(op.key).changes > 0;
    this.upsert.run(op.key, op.value);
    return true;
  }

  private enqueue(key: string, value: string | undefined): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.pending.push({ key, value, resolve, reject });
      this.flushing ??= setImmediate(() => this.flush());
    });
  }

  /** Commits every write asked for since the last flush; settles each caller's promise after. */
  flush(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    const ops = this.pending;
    if (ops.length === 0) return;
    this.pending = [];
    // The tables' connection to this file may hold the write lock for its own group commit.
    commitOpenWrites();
    this.stats.commits += 1;
    this.stats.writes += ops.length;
    try {
      if (ops.length === 1) ops[0]!.result = this.apply(ops[0]!);
      else this.commitBatch(ops);
    } catch (err) {
      if (ops.length === 1) ops[0]!.error = err;
      // Rolled back as a whole: find out which writes fail on their own.
      else for (const op of ops) {
        try {
          op.result = this.apply(op);
        } catch (e) {
          op.error = e;
        }
      }
    }
    for (const op of ops) {
      if (op.error === undefined) op.resolve(op.result ?? false);
      else op.reject(op.error);
    }
  }

  /**
   * Keys starting with `prefix`: a range scan of the primary key (SQLite compares text bytewise),
   * where LIKE would treat `_` and `%` in ids as wildcards.
   */
  keysWithPrefix(prefix: string): string[] {
    if (prefix === '') return this.db.prepare<[], string>('SELECT key FROM keyv').pluck().all();
    const last = prefix.charCodeAt(prefix.length - 1);
    return this.range.all(prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1));
  }

  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    return (this.select.get(key) ?? undefined) as StoredData<Value> | undefined;
  }

  async getMany<Value>(keys: string[]): Promise<Array<StoredData<Value | undefined>>> {
    return keys.map((k) => (this.select.get(k) ?? undefined) as StoredData<Value | undefined>);
  }

  /** Keyv keeps the expiry inside the serialised value, so the TTL argument is not needed here. */
  set(key: string, value: string): Promise<boolean> {
    return this.enqueue(key, value);
  }

  delete(key: string): Promise<boolean> {
    return this.enqueue(key, undefined);
  }

  async has(key: string): Promise<boolean> {
    return this.select.get(key) !== undefined;
  }

  /** Never called by our store (no namespace deletes, see store.ts); required by Keyv. */
  async clear(): Promise<void> {
    throw new Error('clear() is not supported on the hermes store');
  }

  async disconnect(): Promise<void> {
    if (!this.db.open) return;
    this.flush();
    this.db.close();
  }
}
