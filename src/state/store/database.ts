import { Kysely, PostgresDialect, sql, type Compilable, type CompiledQuery, type DatabaseIntrospector, type LogEvent, type PostgresDialectConfig, type QueryResult, type TableMetadata, type Transaction } from 'kysely';
import Database from 'better-sqlite3';
import type { Pool } from 'pg';
import type { Logger } from '../../basics/log.js';
import type { Tables } from './db-schema.js';
import { currentSchema, migrateToLatest } from './migrations.js';
import { COMMIT_AT_ONCE_MARK, GroupCommitSqliteDialect } from './sqlite-group-commit.js';

export type Db = Kysely<Tables>;
export type Tx = Transaction<Tables>;
/** A query runs on the database or inside a transaction the caller holds. */
export type DbOrTx = Db | Tx;

/**
 * The operational database: typed queries (Kysely) over the SQLite file or the shared PostgreSQL
 * database. `dialect` is for the few statements the two write differently (the work queue's
 * claim); everything else is one query for both.
 */
export interface OpenedDatabase {
  db: Db;
  /**
   * For the write a platform's acknowledgement waits for (a receipt): on PostgreSQL the store's
   * reserved connections (PostgresStore.reserved), so it never queues behind the pool's turn work;
   * otherwise `db` (SQLite commits it at once with COMMIT_AT_ONCE).
   */
  urgent: Db;
  dialect: 'sqlite' | 'postgres';
  /** Statements run so far and the time callers waited for them (the bench reads this). */
  readonly stats: QueryStats;
  close(): Promise<void>;
}

/**
 * `.modifyEnd(COMMIT_AT_ONCE)` on a write: on SQLite it commits (with the rest of the open turn's
 * writes) as soon as it has run, not at the end of the event-loop turn; for a write that a
 * platform's acknowledgement waits for. A comment to SQL, so a no-op on PostgreSQL.
 */
export const COMMIT_AT_ONCE = sql.raw(` ${COMMIT_AT_ONCE_MARK}`);

/** How long a statement waits for SQLite's write lock before failing (as the key-value store). */
const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/**
 * Counts of the statements run; `onQuery`, when set, is told each one (tests that list a reply's
 * statements). `commits`: on SQLite, the COMMITs of the group commit (sqlite-group-commit.ts), each
 * holding every write of one event-loop turn; DDL and PRAGMAs that commit on their own are not in
 * it. Not counted on PostgreSQL (each statement outside a transaction commits there).
 */
export interface QueryStats {
  queries: number;
  waitMs: number;
  readonly commits?: number;
  onQuery?: (sql: string) => void;
}

function counted(): { stats: QueryStats; log: (e: LogEvent) => void } {
  const stats: QueryStats = { queries: 0, waitMs: 0 };
  return {
    stats,
    log: (e) => {
      stats.queries += 1;
      stats.waitMs += e.queryDurationMillis;
      stats.onQuery?.(e.query.sql);
    },
  };
}

/**
 * Opens the tables in the SQLite file (a connection of its own next to the key-value store's;
 * both run on this one thread) and migrates them.
 *
 * Writes are group-committed, one COMMIT per event-loop turn (sqlite-group-commit.ts); the
 * key-value store commits this connection's open turn before it writes, so the two never wait on
 * each other. A transaction here must hold only statements, never an await on anything else:
 * while it is open every other statement on the tables waits for it.
 */
export async function openSqliteDatabase(file: string, log?: Logger): Promise<OpenedDatabase> {
  const conn = new Database(file, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  conn.pragma('journal_mode = WAL');
  // Same durability as the key-value store: a commit is safe from kill -9 once in the WAL.
  conn.pragma('synchronous = NORMAL');
  // Checkpoints are the checkpointer thread's job (sqlite-checkpointer.ts).
  conn.pragma('wal_autocheckpoint = 0');
  // Statement journals and sort spills in memory, not in files under /var/tmp: a write inside the
  // group commit's open transaction that may need undoing alone (an upsert, a row with its search
  // triggers) gets a statement journal, and past 64 KB SQLite spilled it to a temporary file it
  // created, wrote, read back and unlinked: a handful of syscalls each, on the event loop's thread.
  // They only ever undo a statement within its transaction; what survives a crash is the WAL's.
  conn.pragma('temp_store = MEMORY');
  const c = counted();
  const cache = withStatementCache(conn);
  const dialect = new GroupCommitSqliteDialect(conn, cache.prepare);
  Object.defineProperty(c.stats, 'commits', { get: () => dialect.stats.commits, enumerable: true });
  const db = new Kysely<Tables>({ dialect, log: c.log });
  try {
    const { applied } = await migrateToLatest(db as Kysely<unknown>);
    if (applied.length) log?.info({ file, applied }, 'store: tables migrated');
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw err;
  }
  return { db, urgent: db, dialect: 'sqlite', stats: c.stats, close: () => db.destroy() };
}

/**
 * A query built and compiled once, run many times with new values. Kysely builds a query as a tree
 * of frozen nodes and compiles it to SQL on every call; for the statements a step runs several
 * times (a message append) that was most of Kysely's share of the CPU profile. `build` gets a
 * placeholder for each named value and must pass each one where a bound parameter goes (values,
 * comparisons), never where the SQL text would depend on it. run() puts the real values in
 * their places; everything else bound at build time stays as compiled.
 */
export function reusableQuery<K extends string, R>(db: DbOrTx, build: (value: <T = string>(name: K) => T) => Compilable<R>): (values: Record<K, unknown>) => Promise<QueryResult<R>> {
  const marks = new Map<unknown, K>();
  // The placeholder stands in for a value of any type the column takes; it only ever becomes a parameter.
  const placeholder = <T,>(name: K): T => {
    const mark = `\u0000hermes-query-value:${name}`;
    marks.set(mark, name);
    return mark as T;
  };
  const compiled: CompiledQuery<R> = build(placeholder).compile();
  const slots = compiled.parameters.map((p) => marks.get(p));
  const unused = [...marks.values()].filter((name) => !slots.includes(name));
  if (unused.length) throw new Error(`reusableQuery: ${unused.join(', ')} not bound as parameters`);
  return (values) => db.executeQuery<R>({ ...compiled, parameters: slots.map((name, i) => (name === undefined ? compiled.parameters[i] : values[name])) });
}

/** Distinct statements kept prepared; past it the oldest is dropped (SQL text is bounded by the code, IN lists aside). */
const STATEMENT_CACHE_MAX = 256;

/**
 * Kysely's SQLite driver prepares every statement it runs: SQLite parses and plans the SQL again
 * each time, which was the largest single cost of a step in the CPU profile (round 3). This hands
 * it the statement prepared the first time its SQL was seen. better-sqlite3 runs a statement to
 * completion synchronously, so one is never shared by two queries at once; a statement still busy
 * (an iterator left open) is not reused.
 */
export function withStatementCache(conn: Database.Database, max = STATEMENT_CACHE_MAX): { prepare(sql: string): Database.Statement; close(): void } {
  const statements = new Map<string, Database.Statement>();
  return {
    prepare(sql) {
      const found = statements.get(sql);
      if (found && !found.busy) return found;
      const stmt = conn.prepare(sql);
      if (!found) {
        if (statements.size >= max) statements.delete(statements.keys().next().value!);
        statements.set(sql, stmt);
      }
      return stmt;
    },
    close: () => {
      statements.clear();
      conn.close();
    },
  };
}

/**
 * The tables on the shared PostgreSQL database, on the pool the key-value store uses; `reserved`:
 * its connections for receipts (PostgresStore.reserved), else receipts share the pool.
 */
export async function openPostgresDatabase(pool: Pool, log?: Logger, reserved?: Pool): Promise<OpenedDatabase> {
  const c = counted();
  // The pools belong to the key-value store, which ends them; destroy() here must not.
  const on = (p: Pool) => new Kysely<Tables>({ dialect: new PostgresDialect({ pool: { connect: () => p.connect(), end: async () => undefined } }), log: c.log });
  const db = on(pool);
  const urgent = reserved ? on(reserved) : db;
  const schema = await currentSchema(db as Kysely<unknown>);
  const migrating = postgresMigrationDb(pool, schema);
  const { applied } = await migrateToLatest(migrating, { schema }).finally(() => migrating.destroy());
  if (applied.length) log?.info({ schema, applied }, 'store: tables migrated');
  return { db, urgent, dialect: 'postgres', stats: c.stats, close: async () => void (await Promise.all([db.destroy(), urgent === db ? undefined : urgent.destroy()])) };
}

/**
 * A handle on `pool` for migrating the tables in `schema`. Kysely's migrator looks for its
 * bookkeeping tables through the dialect's introspector, and PostgreSQL's reads the catalog of
 * every schema in the database, calling functions by schema name on each row: a schema somebody
 * else drops during that read (another deployment's, a parallel test's) failed our migration with
 * "schema … does not exist" (test/store/migrate-beside-drops.e2e.test.ts: 21 of 25 fresh schemas
 * failed beside three loops creating and dropping schemas). This introspector reads `schema` only.
 * destroy() leaves the pool open.
 */
export function postgresMigrationDb(pool: Pool, schema: string): Kysely<unknown> {
  return new Kysely<unknown>({ dialect: new OwnSchemaDialect({ pool: { connect: () => pool.connect(), end: async () => undefined } }, schema) });
}

class OwnSchemaDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly schema: string,
  ) {
    super(config);
  }

  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    const schema = this.schema;
    const getTables = async (): Promise<TableMetadata[]> => {
      const { rows } = await sql<{ name: string; kind: string }>`
        select c.relname as name, c.relkind as kind from pg_catalog.pg_class c
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = ${schema} and c.relkind in ('r', 'p', 'v', 'm', 'f')`.execute(db);
      return rows.map((r) => ({ name: r.name, schema, isView: r.kind === 'v' || r.kind === 'm', columns: [] }));
    };
    return {
      getSchemas: async () => (await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace where nspname = ${schema}`.execute(db)).rows,
      getTables,
      getMetadata: async () => ({ tables: await getTables() }),
    };
  }
}
