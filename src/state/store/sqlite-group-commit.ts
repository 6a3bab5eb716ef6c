import type Database from 'better-sqlite3';
import {
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
} from 'kysely';

/**
 * Group commit for the tables on SQLite: every write asked for during one turn of the event loop
 * commits in one transaction when that turn ends (setImmediate), and each writer's promise settles
 * only after that COMMIT, so "resolved" still means "in the WAL" (the ack-after-durable rule, the
 * question-before-the-model rule). Reads run at once.
 *
 * Why: a commit costs far more than the rows in it. Each one writes every page it touched to the
 * WAL again (a message append touches the table, its index and the full-text index: several 4 KB
 * pages for a few hundred bytes of text), takes the write lock and updates the WAL index. With
 * each statement committing on its own a reply was 13 commits and about 250 KB of WAL; the main
 * thread's CPU per reply was twice round 2's, which grouped a loop turn's writes the same way.
 *
 * How: a write (INSERT / UPDATE / DELETE outside an explicit transaction) opens the turn's
 * transaction if none is open and runs at once, inside it; its result is handed back after the
 * COMMIT. A Kysely transaction (`db.transaction()`) runs inside the turn's transaction as a
 * savepoint: its statements are atomic together, its ROLLBACK undoes only them, and its `execute`
 * resolves only after the COMMIT that made it durable. While it is open, other callers' statements
 * wait for it (as Kysely's own SQLite driver makes them wait), so nothing of theirs can be undone
 * by its rollback. Anything else that writes (DDL, PRAGMA) first commits the open turn, then runs
 * on its own.
 *
 * What a reader sees: the same connection's rows written this turn, before their COMMIT (the
 * writers have not been told yet). If the COMMIT fails (disk full, I/O error), every write of the
 * turn is rolled back and each of their promises rejects with the error: none of them is reported
 * done. A write that fails on its own (a constraint) fails alone; SQLite undoes just that statement.
 *
 * The write lock is held from a turn's first write until its COMMIT, across awaits. The key-value
 * store's connection to the same file writes synchronously on this thread, so it must never find
 * the lock taken (it would block the thread for its busy timeout): it calls `commitOpenWrites()`
 * before it writes (sqlite-adapter.ts).
 */

const open = new Set<GroupCommitDriver>();

/** Commits every open turn of writes in this process now. For another connection about to write the same file. */
export function commitOpenWrites(): void {
  for (const driver of open) driver.commitNow();
}

/** Counters the bench and tests read: commits made, and the writes they held. */
export interface CommitStats {
  commits: number;
  writes: number;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

const WRITE = /^\s*(insert|update|delete|replace)\b/i;

/**
 * Ends a write's SQL (Kysely: `.modifyEnd(COMMIT_AT_ONCE)`, database.ts) to commit the open turn
 * the moment that write has run instead of at the turn's end: for the one write a platform's
 * acknowledgement waits for, which must not wait behind a busy loop turn. A plain comment to SQL.
 */
export const COMMIT_AT_ONCE_MARK = '/* commit at once */';
const SAVEPOINT = 'hermes_tx';

class Lease implements DatabaseConnection {
  constructor(private readonly driver: GroupCommitDriver) {}
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute<R>(this, query);
  }
  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    while (this.driver.busyFor(this)) await this.driver.turnEnded;
    const stmt = this.driver.prepare(query.sql);
    if (!stmt.reader) throw new Error('streaming is for queries that return rows');
    for (const row of stmt.iterate(query.parameters as unknown[])) yield { rows: [row as R] };
  }
}

class GroupCommitDriver implements Driver {
  readonly stats: CommitStats = { commits: 0, writes: 0 };
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly free: Lease[] = [];
  /** The writes of the open turn, waiting for its COMMIT; undefined when no transaction is open. */
  private waiting: Waiter[] | undefined;
  private scheduled: NodeJS.Immediate | undefined;
  /** The caller whose Kysely transaction (a savepoint) is open, and a promise that settles when it ends. */
  private owner: Lease | undefined;
  private ownerDone: Promise<void> | undefined;
  private endOwner: (() => void) | undefined;

  constructor(
    private readonly conn: Database.Database,
    readonly prepare: (sql: string) => Database.Statement,
  ) {
    this.begin = conn.prepare('BEGIN');
    this.commit = conn.prepare('COMMIT');
    this.rollback = conn.prepare('ROLLBACK');
    open.add(this);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.free.pop() ?? new Lease(this);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (this.free.length < 1024) this.free.push(connection as Lease);
  }

  /**
   * True while another caller's transaction is open; wait on `ownerDone` and ask again. Callers
   * loop on it themselves and act in the same synchronous run as the last check: a helper that
   * awaited for them would resolve a microtask later, and two waiters woken together could both
   * start.
   */
  busyFor(lease: Lease): boolean {
    return this.owner !== undefined && this.owner !== lease;
  }

  /**
   * What a write must wait for first: this connection's transaction held by another caller, or a
   * transaction mid-way on another connection in this process (its write lock cannot be committed
   * from outside until it ends). Undefined when the write may go ahead in this synchronous run.
   */
  private blockedFor(lease: Lease): Promise<void> | undefined {
    if (this.busyFor(lease)) return this.ownerDone;
    for (const other of open) if (other !== this && other.owner !== undefined) return other.ownerDone;
    return undefined;
  }

  /** Commits the open turns of the other connections in this process, so the write lock is free for this one. */
  private commitOthers(): void {
    for (const other of open) if (other !== this) other.commitNow();
  }

  get turnEnded(): Promise<void> | undefined {
    return this.ownerDone;
  }

  async execute<R>(lease: Lease, query: CompiledQuery): Promise<QueryResult<R>> {
    while (this.busyFor(lease)) await this.ownerDone;
    const stmt = this.prepare(query.sql);
    const params = query.parameters as unknown[];
    if (stmt.readonly) return run<R>(stmt, params);
    if (this.owner === lease) {
      try {
        return run<R>(stmt, params);
      } catch (err) {
        this.afterError(err);
        throw err;
      }
    }
    // A write outside a transaction. Another connection to the file in this process (a second store
    // on the same file: tests of two instances, tools) must not hold the write lock now: this
    // thread would block on it for the busy timeout, and that connection could never commit.
    for (let blocked = this.blockedFor(lease); blocked; blocked = this.blockedFor(lease)) await blocked;
    this.commitOthers();
    if (!WRITE.test(query.sql)) {
      this.commitNow();
      return run<R>(stmt, params);
    }
    this.openTurn();
    let result: QueryResult<R>;
    try {
      result = run<R>(stmt, params);
    } catch (err) {
      this.afterError(err);
      throw err;
    }
    this.stats.writes += 1;
    const committed = this.untilCommitted();
    if (query.sql.endsWith(COMMIT_AT_ONCE_MARK)) this.commitNow();
    await committed;
    return result;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    for (let blocked = this.blockedFor(lease); blocked; blocked = this.blockedFor(lease)) await blocked;
    this.commitOthers();
    this.owner = lease;
    this.ownerDone = new Promise<void>((resolve) => (this.endOwner = resolve));
    try {
      this.openTurn();
      this.conn.exec(`SAVEPOINT ${SAVEPOINT}`);
    } catch (err) {
      this.afterError(err);
      this.release();
      throw err;
    }
  }

  async commitTransaction(): Promise<void> {
    try {
      this.conn.exec(`RELEASE ${SAVEPOINT}`);
    } catch (err) {
      this.afterError(err);
      this.release();
      throw err;
    }
    this.stats.writes += 1;
    const committed = this.untilCommitted();
    this.release();
    await committed;
  }

  async rollbackTransaction(): Promise<void> {
    try {
      if (this.conn.inTransaction) this.conn.exec(`ROLLBACK TO ${SAVEPOINT}; RELEASE ${SAVEPOINT}`);
    } finally {
      this.release();
    }
  }

  async savepoint(_c: DatabaseConnection, name: string): Promise<void> {
    this.conn.exec(`SAVEPOINT "${name.replace(/"/g, '')}"`);
  }

  async rollbackToSavepoint(_c: DatabaseConnection, name: string): Promise<void> {
    this.conn.exec(`ROLLBACK TO "${name.replace(/"/g, '')}"`);
  }

  async releaseSavepoint(_c: DatabaseConnection, name: string): Promise<void> {
    this.conn.exec(`RELEASE "${name.replace(/"/g, '')}"`);
  }

  async destroy(): Promise<void> {
    this.commitNow();
    open.delete(this);
    this.conn.close();
  }

  /** Commits the open turn now (unless a transaction is mid-way: then as soon as it ends). */
  commitNow(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    if (this.owner !== undefined || this.waiting === undefined) return;
    const waiting = this.waiting;
    this.waiting = undefined;
    try {
      this.commit.run();
    } catch (err) {
      if (this.conn.inTransaction) this.rollback.run();
      for (const w of waiting) w.reject(err);
      return;
    }
    this.stats.commits += 1;
    for (const w of waiting) w.resolve();
  }

  private openTurn(): void {
    if (this.waiting !== undefined) return;
    this.begin.run();
    this.waiting = [];
    this.scheduled = setImmediate(() => this.commitNow());
  }

  private untilCommitted(): Promise<void> {
    const waiting = this.waiting;
    // The statement ran in autocommit (the turn ended under it): it is committed already.
    if (waiting === undefined) return Promise.resolve();
    return new Promise<void>((resolve, reject) => waiting.push({ resolve, reject }));
  }

  /** A statement failed. If SQLite rolled the whole transaction back with it, the turn's writes are gone: tell their callers. */
  private afterError(err: unknown): void {
    if (this.waiting === undefined || this.conn.inTransaction) return;
    const waiting = this.waiting;
    this.waiting = undefined;
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    for (const w of waiting) w.reject(err);
  }

  private release(): void {
    const end = this.endOwner;
    this.owner = undefined;
    this.ownerDone = undefined;
    this.endOwner = undefined;
    end?.();
    // The turn may have ended while the transaction was open.
    if (this.waiting !== undefined && this.scheduled === undefined) this.scheduled = setImmediate(() => this.commitNow());
  }
}

function run<R>(stmt: Database.Statement, params: unknown[]): QueryResult<R> {
  if (stmt.reader) return { rows: stmt.all(params) as R[] };
  const { changes, lastInsertRowid } = stmt.run(params);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/** Kysely's SQLite dialect with the group-commit driver above. `prepare` may hand out cached statements. */
export class GroupCommitSqliteDialect implements Dialect {
  private readonly driver: GroupCommitDriver;
  constructor(conn: Database.Database, prepare: (sql: string) => Database.Statement) {
    this.driver = new GroupCommitDriver(conn, prepare);
  }
  get stats(): CommitStats {
    return this.driver.stats;
  }
  createDriver(): Driver {
    return this.driver;
  }
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
