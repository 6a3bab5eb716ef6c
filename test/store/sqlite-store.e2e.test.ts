import { copyFile, mkdtemp, rm, stat, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Keyv from 'keyv';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { startCheckpointer, type Checkpointer } from '../../src/state/store/sqlite-checkpointer.js';
import { SqliteKeyvAdapter } from '../../src/state/store/sqlite-adapter.js';
import { createKeyvStore, StoreReadError } from '../../src/state/store/keyv-store.js';
import { storeKey, StoreWriteError, type Store } from '../../src/state/store/store.js';

let dir: string;
const open: Store[] = [];

async function openAt(file: string, busyTimeoutMs?: number): Promise<Store> {
  const store = await createSqliteStore({ file, busyTimeoutMs });
  open.push(store);
  return store;
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-store-'));
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close().catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

describe('sqlite store', () => {
  it('creates the directory, uses WAL, and keeps values across a reopen', async () => {
    const file = path.join(dir, 'nested', 'deeper', 'hermes.sqlite');
    const first = await createSqliteStore({ file });
    await first.set('k', { a: 1, list: ['x', ':colon', null], text: 'ünïcödé' });
    await first.close();

    expect((await stat(file)).isFile()).toBe(true);
    const probe = new Database(file, { readonly: true });
    const mode = probe.pragma('journal_mode', { simple: true });
    probe.close();
    expect(mode).toBe('wal');

    const second = await openAt(file);
    expect(await second.get('k')).toEqual({ a: 1, list: ['x', ':colon', null], text: 'ünïcödé' });
    expect(await second.get('missing')).toBeUndefined();
  });

  it('throws StoreWriteError when another connection holds the write lock (SQLITE_BUSY)', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    const store = await openAt(file, 50);
    await store.set('k', 'before');

    const other = new Database(file);
    other.exec('BEGIN EXCLUSIVE');
    try {
      const failure = await store.set('k', 'during').then(() => undefined, (e: unknown) => e);
      expect(failure).toBeInstanceOf(StoreWriteError);
      expect(String((failure as Error).message)).toMatch(/SQLITE_BUSY|locked/i);
      await expect(store.update<string>('k', () => 'during')).rejects.toBeInstanceOf(StoreWriteError);
    } finally {
      other.exec('COMMIT');
      other.close();
    }
    expect(await store.get('k')).toBe('before');
    await store.set('k', 'after');
    expect(await store.get('k')).toBe('after');
  });

  it('surfaces a closed database as StoreWriteError on write and StoreReadError on read', async () => {
    const adapter = new SqliteKeyvAdapter(path.join(dir, 'hermes.sqlite'), { busyTimeoutMs: 50 });
    const store = createKeyvStore(new Keyv({ store: adapter, useKeyPrefix: false, throwOnErrors: true }));
    await store.set('k', 1);
    expect(await store.get('k')).toBe(1);

    await adapter.disconnect();
    await expect(store.set('k', 2)).rejects.toBeInstanceOf(StoreWriteError);
    await expect(store.get('k')).rejects.toBeInstanceOf(StoreReadError);
    await expect(store.delete('k')).rejects.toBeInstanceOf(StoreWriteError);
  });

  it('refuses to open a path that is a directory, naming the path', async () => {
    const file = path.join(dir, 'is-a-dir');
    await mkdir(file);
    await expect(createSqliteStore({ file })).rejects.toThrow(file);
  });

});

describe('sqlite store sweeping', () => {
  it('deletes rows past their TTL on open, without touching live ones', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    // TTLs are judged by Date.now(): only the date is faked, timers and I/O stay real.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    onTestFinished(() => void vi.useRealTimers());
    const first = await createSqliteStore({ file });
    await first.set('expiring', 'x', 30);
    await first.set('ttl-live', 'y', 60_000);
    await first.set('forever', 'z');
    await first.close();
    vi.setSystemTime(Date.now() + 80);

    const reopened = await openAt(file);
    const probe = new Database(file, { readonly: true });
    const rows = probe.prepare('SELECT key FROM keyv ORDER BY key').all() as Array<{ key: string }>;
    probe.close();
    expect(rows.map((r) => r.key)).toEqual(['forever', 'ttl-live']);
    expect(await reopened.get('ttl-live')).toBe('y');
  });
});

describe('sqlite group commit', () => {
  const refuseKeyBad = (file: string) => {
    const db = new Database(file);
    db.exec("CREATE TRIGGER refuse_bad BEFORE INSERT ON keyv WHEN NEW.key = 'bad' BEGIN SELECT RAISE(ABORT, 'refused by test trigger'); END;");
    db.close();
  };

  it('commits the writes of one event-loop turn together, each promise settling only once its row is on disk', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    const adapter = new SqliteKeyvAdapter(file, { busyTimeoutMs: 50 });
    const store = createKeyvStore(new Keyv({ store: adapter, useKeyPrefix: false, throwOnErrors: true }));
    open.push(store);
    const reader = new Database(file, { readonly: true });
    try {
      const rows = () => (reader.prepare('SELECT count(*) AS n FROM keyv').get() as { n: number }).n;
      const writes = Array.from({ length: 50 }, (_, i) => store.set(`k${i}`, i));
      // Asked for, not yet committed: nothing is visible to another connection before the turn ends.
      expect(rows()).toBe(0);
      await Promise.all(writes);
      expect(rows()).toBe(50);
      expect(adapter.stats.commits).toBe(1);
      expect(adapter.stats.writes).toBe(50);

      await store.set('later', 'x');
      expect(adapter.stats.commits).toBe(2);
      expect(await store.get('later')).toBe('x');
    } finally {
      reader.close();
    }
  });

  it('fails only the write that fails when a batch is rolled back; the others land', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    const adapter = new SqliteKeyvAdapter(file, { busyTimeoutMs: 50 });
    refuseKeyBad(file);
    const store = createKeyvStore(new Keyv({ store: adapter, useKeyPrefix: false, throwOnErrors: true }));
    open.push(store);
    const results = await Promise.allSettled([store.set('a', 1), store.set('bad', 2), store.delete('missing'), store.set('c', 3)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StoreWriteError);
    expect(String((results[1] as PromiseRejectedResult).reason.message)).toContain('refused by test trigger');
    expect(await store.get('a')).toBe(1);
    expect(await store.get('bad')).toBeUndefined();
    expect(await store.get('c')).toBe(3);
  });

  it('commits what is waiting when the store closes', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    const store = await createSqliteStore({ file });
    const write = store.set('k', 'v');
    await store.close();
    await write;
    const probe = new Database(file, { readonly: true });
    const row = probe.prepare('SELECT value FROM keyv WHERE key = ?').get('k') as { value: string } | undefined;
    probe.close();
    expect(JSON.parse(row!.value).value).toBe('v');
  });
});

describe('sqlite checkpoints off the main thread', () => {
  it('closing finishes in a process with nothing else to do (the checkpoint thread is waited for, not abandoned)', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'close-child.ts')], { encoding: 'utf8', timeout: 20_000 });
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe('closed\n');
    expect(child.status).toBe(0);
  });

  it('the bot connection never checkpoints; the checkpoint thread copies the WAL into the database file', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    const store = await openAt(file);
    // ~6 MB: past the WAL size at which the checkpoint thread starts (4 MB, SQLite's own threshold).
    await Promise.all(Array.from({ length: 300 }, (_, i) => store.set(`k${i}`, 'x'.repeat(20_000))));
    // The database file alone (without its -wal) holds the rows only once a checkpoint copied them.
    const inDbFileAlone = async () => {
      const copy = path.join(dir, `copy-${Date.now()}.sqlite`);
      await copyFile(file, copy);
      const db = new Database(copy, { readonly: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM keyv WHERE key LIKE 'k%'").get() as { n: number }).n;
      } catch {
        return 0; // the table itself is not in the file yet
      } finally {
        db.close();
      }
    };
    const deadline = Date.now() + 10_000;
    let n = await inDbFileAlone();
    while (n < 300 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      n = await inDbFileAlone();
    }
    expect(n).toBe(300);
  });
});

describe('the checkpoint thread runs only while the WAL needs it', () => {
  const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  /** A writer on w.sqlite in WAL mode with SQLite's own checkpoints off, so only the thread copies the WAL; closed when the test ends. */
  const walWriter = () => {
    const file = path.join(dir, 'w.sqlite');
    const writer = new Database(file);
    onTestFinished(() => { writer.close(); });
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)');
    return { file, writer };
  };
  const walSize = () => stat(`${path.join(dir, 'w.sqlite')}-wal`).then((s) => s.size, () => 0);
  const dbFileRows = () => {
    const copy = path.join(dir, `copy-${Math.random()}.sqlite`);
    return copyFile(path.join(dir, 'w.sqlite'), copy).then(() => {
      const db = new Database(copy, { readonly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
      } catch {
        return 0;
      } finally {
        db.close();
      }
    });
  };

  it('stays off under the WAL threshold, starts past it, copies the WAL, ends when idle with the WAL emptied, and comes back', async () => {
    const { file, writer } = walWriter();
    const insert = writer.prepare('INSERT INTO t (v) VALUES (?)');
    const fallback = vi.fn();
    const cp: Checkpointer = startCheckpointer(file, { fallback, everyMs: 50, pollMs: 50, idleStopMs: 300, startAtWalBytes: 256 * 1024 });
    onTestFinished(() => cp.stop());

    insert.run('small');
    await new Promise((r) => setTimeout(r, 400));
    expect(await walSize()).toBeGreaterThan(0);
    expect(await walSize()).toBeLessThan(256 * 1024);
    expect(cp.running).toBe(false);
    expect(await dbFileRows()).toBe(0);

    writer.transaction(() => { for (let i = 0; i < 100; i++) insert.run('y'.repeat(4000)); })();
    await until('the thread to start', () => cp.running);
    await until('the rows to reach the database file', async () => (await dbFileRows()) === 101);
    await until('the thread to end', () => !cp.running);
    expect(await walSize()).toBe(0);

    writer.transaction(() => { for (let i = 0; i < 100; i++) insert.run('z'.repeat(4000)); })();
    await until('the thread to start again', () => cp.running);
    await until('the new rows to reach the database file', async () => (await dbFileRows()) === 201);
    await cp.stop();
    expect(cp.running).toBe(false);
    expect(fallback).not.toHaveBeenCalled();
  });

  it('a WAL left past the threshold (a previous process that died) is checkpointed right after open', async () => {
    const { file, writer } = walWriter();
    writer.transaction(() => { for (let i = 0; i < 100; i++) writer.prepare('INSERT INTO t (v) VALUES (?)').run('y'.repeat(4000)); })();
    const cp = startCheckpointer(file, { fallback: () => undefined, everyMs: 50, pollMs: 10_000, idleStopMs: 60_000, startAtWalBytes: 256 * 1024 });
    onTestFinished(() => cp.stop());
    await until('the rows to reach the database file', async () => (await dbFileRows()) === 100);
    expect(cp.running).toBe(true);
  });
});
