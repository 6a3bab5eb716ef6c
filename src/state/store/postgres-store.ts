import pg from 'pg';
import type { Logger } from '../../basics/log.js';
import { StoreWriteError, type Store, type UpdateOptions, type WriteNotice } from './store.js';
import { StoreReadError } from './keyv-store.js';
import { createKeyedSerialiser } from './keyed-serialiser.js';
import { migrate } from './pg-schema.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database (any libpq-style URL `pg` accepts). */
  url: string;
  log?: Logger;
  /** Connections in the pool; default 10. */
  poolSize?: number;
  /** One statement, and the wait for a free connection; default 15 s. */
  queryTimeoutMs?: number;
  /** How often rows past their TTL are deleted (also once at open); default 1 h. */
  sweepIntervalMs?: number;
  now?: () => number;
}

/** The store plus the pool it runs on, which the cluster parts (inbox, leases) share. */
export interface PostgresStore extends Store {
  pool: pg.Pool;
  /**
   * RESERVED_CONNECTIONS connections of their own for the one write a platform's acknowledgement
   * waits for (the receipt, src/gateway/receipts.ts): on the shared pool it queued behind every
   * turn's statements, and at 500 sessions Slack's 3 s ran out before it was written.
   */
  reserved: pg.Pool;
  url: string;
}

/** Connections for receipts beside the pool: one journals while another may be reconnecting. */
export const RESERVED_CONNECTIONS = 2;

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** host:port/database of a URL, for logs and errors: never the user or password. */
export function describePgUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

/** A pool with a timeout on every wait: connecting, each statement, and an abandoned transaction. */
export function createPgPool(url: string, opts: { max?: number; timeoutMs?: number; log?: Logger } = {}): pg.Pool {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
    // A transaction left open (a bug, a stalled process) would hold row locks for everyone.
    idle_in_transaction_session_timeout: timeoutMs * 2,
    keepAlive: true,
  });
  // An idle connection the server dropped must not crash the process; the next query reconnects.
  pool.on('error', (err) => opts.log?.warn({ err: err.message }, 'store: an idle PostgreSQL connection failed'));
  return pool;
}

/**
 * The Store on PostgreSQL, for several instances sharing one database. Every write of a key runs
 * in this process's per-key order (as on SQLite), and update() holds the row with SELECT … FOR
 * UPDATE for its read-modify-write, so a compare-and-set is atomic across processes too. A key that
 * does not exist yet is inserted (value NULL) inside the same transaction first, so two instances
 * creating one key also queue on its row. Schema migrations run before the first query.
 */
export async function createPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const now = opts.now ?? Date.now;
  const where = describePgUrl(opts.url);
  const pool = createPgPool(opts.url, { max: opts.poolSize, timeoutMs: opts.queryTimeoutMs, log: opts.log });
  // Connects on first use only: a bot with no platform receipts never opens them.
  const reserved = createPgPool(opts.url, { max: RESERVED_CONNECTIONS, timeoutMs: opts.queryTimeoutMs, log: opts.log });
  try {
    const { from, to } = await migrate(pool);
    if (from !== to) opts.log?.info({ database: where, from, to }, 'store: PostgreSQL schema migrated');
  } catch (err) {
    await Promise.all([pool.end(), reserved.end()]).catch(() => undefined);
    if (err instanceof Error && err.name === 'StartupRefusal') throw err;
    throw new Error(`cannot open the PostgreSQL store at ${where}: ${(err as Error).message}`, { cause: err });
  }

  const serialiser = createKeyedSerialiser();
  let closed = false;
  const label = (key: string) => JSON.stringify(key);
  const parse = <T>(json: string | null | undefined): T | undefined => (json == null ? undefined : ((JSON.parse(json) as T | null) ?? undefined));
  const live = (expiresAt: string | null) => expiresAt === null || Number(expiresAt) > now();
  const checkTtl = (key: string, ttlMs?: number) => {
    if (ttlMs !== undefined && !(ttlMs > 0)) throw new StoreWriteError(`store write for key ${label(key)} has an invalid TTL: ${ttlMs}`);
  };
  const writeError = (what: string, key: string, err: unknown) =>
    err instanceof StoreWriteError ? err : new StoreWriteError(`store ${what} failed for key ${label(key)}: ${(err as Error).message}`, { cause: err });

  async function get<T>(key: string): Promise<T | undefined> {
    try {
      const res = await pool.query<{ value: string | null }>(
        'SELECT value FROM hermes_kv WHERE key = $1 AND value IS NOT NULL AND (expires_at IS NULL OR expires_at > $2)',
        [key, now()],
      );
      return parse<T>(res.rows[0]?.value);
    } catch (err) {
      throw new StoreReadError(`store read failed for key ${label(key)}: ${(err as Error).message}`, { cause: err });
    }
  }

  async function set(key: string, value: unknown, ttlMs?: number): Promise<void> {
    checkTtl(key, ttlMs);
    await pool.query(
      'INSERT INTO hermes_kv (key, value, expires_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
      [key, JSON.stringify(value ?? null), ttlMs === undefined ? null : now() + ttlMs],
    );
  }

  async function update<T>(key: string, fn: (current: T | undefined) => T | undefined, ttlMs?: number, notice?: WriteNotice) {
    checkTtl(key, ttlMs);
    const client = await pool.connect();
    let done = false;
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO hermes_kv (key, value, expires_at) VALUES ($1, NULL, NULL) ON CONFLICT (key) DO NOTHING', [key]);
      const res = await client.query<{ value: string | null; expires_at: string | null }>('SELECT value, expires_at FROM hermes_kv WHERE key = $1 FOR UPDATE', [key]);
      const row = res.rows[0];
      const before = row && live(row.expires_at) ? parse<T>(row.value) : undefined;
      let after: T | undefined;
      try {
        after = fn(before);
      } catch (err) {
        throw new CallerError(err);
      }
      if (after === undefined) {
        await client.query('ROLLBACK');
        done = true;
        return { before, after: before };
      }
      await client.query('UPDATE hermes_kv SET value = $2, expires_at = $3 WHERE key = $1', [key, JSON.stringify(after), ttlMs === undefined ? null : now() + ttlMs]);
      // Delivered by the server when (and only if) the COMMIT below succeeds.
      if (notice) await client.query('SELECT pg_notify($1, $2)', [notice.channel, notice.payload]);
      await client.query('COMMIT');
      done = true;
      return { before, after };
    } finally {
      if (!done) await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  // One statement, so it is atomic across instances without a transaction: a missing, expired or
  // non-numeric row starts again from `by` with the new expiry; a live one keeps its expiry.
  async function increment(key: string, by: number, ttlMs?: number): Promise<number> {
    checkTtl(key, ttlMs);
    if (!Number.isFinite(by)) throw new StoreWriteError(`store increment for key ${label(key)} has an invalid amount: ${by}`);
    const t = now();
    const restart = `kv.value IS NULL OR (kv.expires_at IS NOT NULL AND kv.expires_at <= $5) OR jsonb_typeof(kv.value::jsonb) <> 'number'`;
    const res = await pool.query<{ value: string }>(
      `INSERT INTO hermes_kv AS kv (key, value, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET
         value = CASE WHEN ${restart} THEN excluded.value ELSE (kv.value::numeric + $4::numeric)::text END,
         expires_at = CASE WHEN ${restart} THEN excluded.expires_at ELSE kv.expires_at END
       RETURNING value`,
      [key, JSON.stringify(by), ttlMs === undefined ? null : t + ttlMs, by, t],
    );
    return Number(res.rows[0]?.value);
  }

  const sweep = async (): Promise<void> => {
    try {
      await pool.query('DELETE FROM hermes_kv WHERE expires_at < $1', [now()]);
    } catch (err) {
      opts.log?.warn({ err: (err as Error).message }, 'store: sweeping expired rows failed');
    }
  };
  await sweep();
  const timer = setInterval(() => void sweep(), opts.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
  timer.unref();

  const guarded = <R>(what: string, key: string, task: () => Promise<R>): Promise<R> =>
    serialiser.run(key, async () => {
      if (closed) throw new StoreWriteError(`store ${what} failed for key ${label(key)}: the store is closed`);
      try {
        return await task();
      } catch (err) {
        // fn's own exceptions are the caller's; only database failures become StoreWriteError.
        if (err instanceof CallerError) throw err.inner;
        throw writeError(what, key, err);
      }
    });

  return {
    pool,
    reserved,
    url: opts.url,
    get,
    set: (key, value, ttlMs) => guarded('write', key, () => set(key, value, ttlMs)),
    delete: (key, o) =>
      guarded('delete', key, async () => {
        const notice = o?.notice;
        // With a notice: one statement still, the notification sent whether or not a row was there
        // (the deleted row, if any, joined to the one row that carries the notify).
        const res = notice
          ? await pool.query<{ expires_at: string | null; value: string | null }>(
              `WITH d AS (DELETE FROM hermes_kv WHERE key = $1 RETURNING value, expires_at)
               SELECT d.value, d.expires_at FROM (SELECT pg_notify($2, $3)) AS n LEFT JOIN d ON true`,
              [key, notice.channel, notice.payload],
            )
          : await pool.query<{ expires_at: string | null; value: string | null }>('DELETE FROM hermes_kv WHERE key = $1 RETURNING value, expires_at', [key]);
        const row = res.rows[0];
        return row !== undefined && row.value !== null && live(row.expires_at);
      }),
    update: <T>(key: string, fn: (current: T | undefined) => T | undefined, o?: UpdateOptions) => guarded('update', key, () => update<T>(key, fn, o?.ttlMs, o?.notice)),
    increment: (key, by, ttlMs) => guarded('increment', key, () => increment(key, by, ttlMs)),
    async keysWithPrefix(prefix) {
      try {
        // starts_with compares exactly whatever the collation; only recovery lists, so a scan is fine.
        const res = await pool.query<{ key: string }>('SELECT key FROM hermes_kv WHERE starts_with(key, $1) AND value IS NOT NULL AND (expires_at IS NULL OR expires_at > $2)', [prefix, now()]);
        return res.rows.map((r) => r.key);
      } catch (err) {
        throw new StoreReadError(`store listing failed for prefix ${label(prefix)}: ${(err as Error).message}`, { cause: err });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await serialiser.drain();
      await Promise.all([pool.end(), reserved.end()]);
    },
  };
}

/** Carries an exception thrown by update()'s fn past the database error handling, unchanged. */
class CallerError {
  constructor(readonly inner: unknown) {}
}
