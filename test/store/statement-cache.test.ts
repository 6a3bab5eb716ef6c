import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteDatabase, reusableQuery, withStatementCache } from '../../src/state/store/database.js';

/** The prepared-statement cache Kysely's SQLite driver goes through, and queries compiled once (database.ts). */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function tempFile(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-stmt-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return path.join(dir, 'hermes.sqlite');
}

describe('withStatementCache', () => {
  it('prepares a statement once per SQL text and keeps at most `max` of them', async () => {
    const conn = new Database(await tempFile());
    const cache = withStatementCache(conn, 2);
    cleanups.push(() => cache.close());
    const a = cache.prepare('SELECT 1 AS v');
    expect(cache.prepare('SELECT 1 AS v')).toBe(a);
    const b = cache.prepare('SELECT 2 AS v');
    expect(b).not.toBe(a);
    cache.prepare('SELECT 3 AS v'); // the third pushes out the oldest
    expect(cache.prepare('SELECT 2 AS v')).toBe(b);
    const again = cache.prepare('SELECT 1 AS v');
    expect(again).not.toBe(a);
    expect(again.get()).toEqual({ v: 1 });
  });

  it('never hands out a statement that is still running (an open iterator)', async () => {
    const conn = new Database(await tempFile());
    const cache = withStatementCache(conn);
    cleanups.push(() => cache.close());
    conn.exec('CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3)');
    const first = cache.prepare('SELECT n FROM t ORDER BY n');
    const it1 = first.iterate();
    expect(it1.next().value).toEqual({ n: 1 });
    const second = cache.prepare('SELECT n FROM t ORDER BY n');
    expect(second).not.toBe(first);
    expect(second.all()).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect([...it1]).toEqual([{ n: 2 }, { n: 3 }]);
    expect(cache.prepare('SELECT n FROM t ORDER BY n')).toBe(first);
  });

  it('runs reused statements with each query’s own parameters through Kysely', async () => {
    const opened = await openSqliteDatabase(await tempFile());
    cleanups.push(() => opened.close());
    const { db } = opened;
    for (let i = 0; i < 5; i++) {
      await db.insertInto('hermes_message').values({ session_id: `s${i % 2}`, seq: i, body: `{"n":${i}}` }).execute();
    }
    const rows = await db.selectFrom('hermes_message').select(['seq', 'body']).where('session_id', '=', 's1').orderBy('seq').execute();
    expect(rows).toEqual([{ seq: 1, body: '{"n":1}' }, { seq: 3, body: '{"n":3}' }]);
    const other = await db.selectFrom('hermes_message').select('seq').where('session_id', '=', 's0').orderBy('seq').execute();
    expect(other.map((r) => r.seq)).toEqual([0, 2, 4]);
  });
});

describe('reusableQuery', () => {
  it('compiles once and runs with each call’s values, keeping the values bound at build time', async () => {
    const opened = await openSqliteDatabase(await tempFile());
    cleanups.push(() => opened.close());
    const { db } = opened;
    const insert = reusableQuery<'session' | 'body', never>(db, (v) => db.insertInto('hermes_message').values({ session_id: v('session'), seq: 7, body: v('body') }));
    await insert({ session: 'a', body: 'first' });
    const read = reusableQuery<'session', { seq: number; body: string }>(db, (v) => db.selectFrom('hermes_message').select(['seq', 'body']).where('session_id', '=', v('session')).where('seq', '>', 0));
    expect((await read({ session: 'a' })).rows).toEqual([{ seq: 7, body: 'first' }]);
    await insert({ session: 'b', body: 'second' });
    expect((await read({ session: 'b' })).rows).toEqual([{ seq: 7, body: 'second' }]);
    expect((await read({ session: 'c' })).rows).toEqual([]);
  });

  it('refuses a placeholder that did not end up as a bound parameter', async () => {
    const opened = await openSqliteDatabase(await tempFile());
    cleanups.push(() => opened.close());
    const { db } = opened;
    expect(() => reusableQuery<'session', unknown>(db, (v) => (v('session'), db.selectFrom('hermes_message').select('seq').where('session_id', '=', 'fixed')))).toThrow(/session not bound/);
  });
});
