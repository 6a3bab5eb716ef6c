import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMIT_AT_ONCE, openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { SqliteKeyvAdapter } from '../../src/state/store/sqlite-adapter.js';

/**
 * Group commit on the tables (src/state/store/sqlite-group-commit.ts): the writes of one
 * event-loop turn share a COMMIT, and no writer hears "done" before its row is committed: checked
 * with a second connection to the file, which sees committed rows only.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function open(): Promise<{ database: OpenedDatabase; file: string; peek: Database.Database }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-group-commit-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'hermes.sqlite');
  const database = await openSqliteDatabase(file);
  cleanups.push(() => database.close());
  const peek = new Database(file, { readonly: true });
  cleanups.push(() => void peek.close());
  return { database, file, peek };
}

const notices = (peek: Database.Database) => (peek.prepare('SELECT key FROM hermes_notice ORDER BY key').all() as Array<{ key: string }>).map((r) => r.key);

describe('group commit on SQLite', () => {
  it('commits the writes of one turn together, and each resolves only once committed', async () => {
    const { database, peek } = await open();
    const { db } = database;
    const commits0 = database.stats.commits ?? 0;
    const seen: string[][] = [];
    await Promise.all(
      ['a', 'b', 'c'].map(async (key) => {
        await db.insertInto('hermes_notice').values({ key, until: 1 }).execute();
        // Resolved: another connection sees the row.
        seen.push(notices(peek));
      }),
    );
    expect(seen).toEqual([['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'b', 'c']]);
    expect((database.stats.commits ?? 0) - commits0).toBe(1);
    expect(database.stats.queries).toBeGreaterThanOrEqual(3);
  });

  it('runs a transaction atomically inside the turn: its rollback undoes only its own statements', async () => {
    const { database, peek } = await open();
    const { db } = database;
    const outside = db.insertInto('hermes_notice').values({ key: 'outside', until: 1 }).execute();
    const failed = db.transaction().execute(async (tx) => {
      await tx.insertInto('hermes_notice').values({ key: 'inside', until: 1 }).execute();
      throw new Error('changed my mind');
    });
    const kept = db.transaction().execute(async (tx) => {
      await tx.insertInto('hermes_notice').values({ key: 'kept-1', until: 1 }).execute();
      await tx.insertInto('hermes_notice').values({ key: 'kept-2', until: 1 }).execute();
    });
    await expect(failed).rejects.toThrow('changed my mind');
    await Promise.all([outside, kept]);
    expect(notices(peek)).toEqual(['kept-1', 'kept-2', 'outside']);
  });

  it('starts transactions woken together one after the other (no shared savepoint)', async () => {
    const { database, peek } = await open();
    const { db } = database;
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        db.transaction().execute(async (tx) => {
          await tx.insertInto('hermes_notice').values({ key: `t${String(i).padStart(2, '0')}`, until: i }).execute();
          await tx.updateTable('hermes_notice').set({ until: i + 100 }).where('key', '=', `t${String(i).padStart(2, '0')}`).execute();
        }),
      ),
    );
    const rows = peek.prepare('SELECT key, until FROM hermes_notice ORDER BY key').all() as Array<{ key: string; until: number }>;
    expect(rows).toHaveLength(40);
    expect(rows.every((r, i) => r.until === i + 100)).toBe(true);
  });

  it('a failing statement fails alone; the rest of its turn commits', async () => {
    const { database, peek } = await open();
    const { db } = database;
    await db.insertInto('hermes_notice').values({ key: 'dup', until: 1 }).execute();
    const results = await Promise.allSettled([
      db.insertInto('hermes_notice').values({ key: 'dup', until: 2 }).execute(),
      db.insertInto('hermes_notice').values({ key: 'fine', until: 3 }).execute(),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
    expect(notices(peek)).toEqual(['dup', 'fine']);
  });

  it('COMMIT_AT_ONCE commits before the turn ends', async () => {
    const { database, peek } = await open();
    const { db } = database;
    const at = db.insertInto('hermes_notice').values({ key: 'now', until: 1 }).modifyEnd(COMMIT_AT_ONCE).execute();
    const later = db.insertInto('hermes_notice').values({ key: 'later', until: 1 }).execute();
    let settledFirst = '';
    void at.then(() => (settledFirst ||= 'now'));
    void later.then(() => (settledFirst ||= 'later'));
    await at;
    expect(notices(peek)).toContain('now');
    await later;
    expect(settledFirst).toBe('now');
  });

  it('the key-value store writing the same file commits the open turn first instead of meeting a held lock', async () => {
    const { database, file, peek } = await open();
    const kv = new SqliteKeyvAdapter(file, { busyTimeoutMs: 100 });
    cleanups.push(() => kv.disconnect());
    const { db } = database;
    const table = db.insertInto('hermes_notice').values({ key: 'table', until: 1 }).execute();
    // Wait until the insert has run inside its turn's open transaction (this connection sees it, nobody else yet).
    for (let i = 0; i < 1000 && (await db.selectFrom('hermes_notice').select('key').execute()).length === 0; i++) await Promise.resolve();
    expect(notices(peek)).toEqual([]);
    const written = kv.set('fact', JSON.stringify({ value: 1 }));
    // Flushed while the turn is open: without committing it first this write would wait out the busy timeout and fail.
    kv.flush();
    await expect(written).resolves.toBe(true);
    expect(notices(peek)).toEqual(['table']);
    await table;
  });
  it('two stores on one file in one process: a write on one commits the other\'s open turn, and waits for its transaction', async () => {
    const { database: a, file, peek } = await open();
    const b = await openSqliteDatabase(file);
    cleanups.push(() => b.close());
    // Same event-loop turn: A's write holds the write lock until its COMMIT; B's must not meet it.
    await Promise.all([a.db.insertInto('hermes_notice').values({ key: 'a', until: 1 }).execute(), b.db.insertInto('hermes_notice').values({ key: 'b', until: 1 }).execute()]);
    expect(notices(peek)).toEqual(['a', 'b']);
    // A transaction mid-way on A (between its statements): B's write waits for it instead of blocking the thread.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let midway!: () => void;
    const isMidway = new Promise<void>((r) => (midway = r));
    const tx = a.db.transaction().execute(async (t) => {
      await t.insertInto('hermes_notice').values({ key: 'tx-1', until: 1 }).execute();
      midway();
      await held;
      await t.insertInto('hermes_notice').values({ key: 'tx-2', until: 1 }).execute();
    });
    await isMidway;
    const fromB = b.db.insertInto('hermes_notice').values({ key: 'b-2', until: 1 }).execute();
    release();
    await Promise.all([tx, fromB]);
    // Without waiting, B's write would block this thread on the lock A holds and fail with "database is locked".
    expect(notices(peek)).toEqual(['a', 'b', 'b-2', 'tx-1', 'tx-2']);
  });
});
