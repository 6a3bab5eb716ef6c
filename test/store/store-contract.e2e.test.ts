import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { createPostgresStore } from '../../src/state/store/postgres-store.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { SCHEMA_VERSION } from '../../src/state/store/pg-schema.js';
import { StartupRefusal } from '../../src/basics/startup-refusal.js';
import { storeKey, StoreWriteError, type Store } from '../../src/state/store/store.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * What every Store promises, run on each engine. `open()` gives a store on a fresh location;
 * `reopen()` a second handle on the same location (a restart, or on PostgreSQL another instance).
 */
interface Engine {
  name: string;
  open(): Promise<{ store: Store; reopen(): Promise<Store> }>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/**
 * Stores judge a TTL by Date.now() in this process (Keyv on SQLite, the PostgreSQL store's clock),
 * so only the date is faked: timers and I/O stay real, and no test sleeps for an expiry. Call it
 * before opening the store (the PostgreSQL store takes Date.now when it is created).
 */
function fakeDate(): { advance(ms: number): void } {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
  cleanups.push(async () => void vi.useRealTimers());
  return { advance: (ms) => vi.setSystemTime(Date.now() + ms) };
}

const sqlite: Engine = {
  name: 'sqlite',
  async open() {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-contract-'));
    const file = path.join(dir, 'hermes.sqlite');
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const track = async (s: Promise<Store>) => {
      const store = await s;
      cleanups.push(() => store.close());
      return store;
    };
    return { store: await track(createSqliteStore({ file })), reopen: () => track(createSqliteStore({ file })) };
  },
};

const pgUrl = await postgresForTests();
const postgres: Engine = {
  name: 'postgres',
  async open() {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const track = async (s: Promise<Store>) => {
      const store = await s;
      cleanups.push(() => store.close());
      return store;
    };
    return { store: await track(createPostgresStore({ url: schema.url })), reopen: () => track(createPostgresStore({ url: schema.url })) };
  },
};

const memory: Engine = {
  name: 'memory',
  async open() {
    const store = createMemoryStore();
    return { store, reopen: async () => store };
  },
};

const engines = [memory, sqlite, ...(pgUrl ? [postgres] : [])];

describe.each(engines)('store contract on $name', (engine) => {
  it('copies values in and out, and keeps them for the next handle', async () => {
    const { store, reopen } = await engine.open();
    const value = { a: 1, list: ['x', ':colon', null], text: 'ünïcödé 😀' };
    await store.set('k', value);
    value.list.push('mutated');
    const read = await store.get<typeof value>('k');
    read!.list.push('mutated too');
    const other = await reopen();
    expect(await other.get('k')).toEqual({ a: 1, list: ['x', ':colon', null], text: 'ünïcödé 😀' });
    expect(await other.get('missing')).toBeUndefined();
  });

  it('keeps keys built from awkward ids apart, and deletes only the one named', async () => {
    const { store, reopen } = await engine.open();
    const ids = ['a_b', 'a%b', 'aXb', 'a:b', "a'b", 'a"b', 'a b', 'ü', '😀', '%', '_', '', 'a', 'a%25b'];
    const keys = [...ids.map((id) => storeKey('facts', 'slack', id)), storeKey('x:y', 'z'), storeKey('x', 'y:z'), 'plain', storeKey('hermes', 'plain')];
    expect(new Set(keys).size).toBe(keys.length);
    for (const [i, key] of keys.entries()) await store.set(key, { i });
    expect(await store.delete(storeKey('facts', 'slack', 'a_b'))).toBe(true);
    expect(await store.delete(storeKey('facts', 'slack', 'a_b'))).toBe(false);
    const other = await reopen();
    for (const [i, key] of keys.entries()) {
      expect(await other.get(key)).toEqual(key === storeKey('facts', 'slack', 'a_b') ? undefined : { i });
    }
  });

  it('lists keys by exact prefix: wildcard characters in ids match only themselves, deleted keys are gone', async () => {
    const { store, reopen } = await engine.open();
    const inside = ['a_b', 'a%b', 'x', '😀', ''].map((id) => storeKey('journal', 'p_1', id));
    const outside = [storeKey('journal', 'pX1', 'x'), storeKey('journal', 'p%1', 'x'), storeKey('journal', 'p_10', 'x'), storeKey('journal'), 'other'];
    for (const k of [...inside, ...outside]) await store.set(k, 1);
    await store.delete(inside[2]!);
    const prefix = `${storeKey('journal', 'p_1')}:`;
    const expected = inside.filter((k) => k !== inside[2]).sort();
    expect((await store.keysWithPrefix(prefix)).sort()).toEqual(expected);
    expect((await (await reopen()).keysWithPrefix(prefix)).sort()).toEqual(expected);
  });

  it('expires values with a TTL, also when written by update, and keeps the others', async () => {
    if (engine.name === 'memory') return; // its clock is injected: covered in memory-store.test.ts
    const date = fakeDate();
    const { store } = await engine.open();
    await store.set('short', 'soon gone', 1_000);
    await store.update<string>('claim', () => 'claimed', { ttlMs: 1_000 });
    await store.set('long', 'stays');
    expect(await store.get('short')).toBe('soon gone');
    expect(await store.get('claim')).toBe('claimed');
    date.advance(1_100);
    expect(await store.get('short')).toBeUndefined();
    expect(await store.delete('short')).toBe(false);
    expect(await store.get('long')).toBe('stays');
    // An expired claim counts as absent, so it can be claimed again.
    const again = await store.update<string>('claim', (cur) => (cur === undefined ? 'again' : undefined));
    expect(again).toEqual({ before: undefined, after: 'again' });
  });

  it('rejects a non-positive TTL instead of storing forever', async () => {
    const { store } = await engine.open();
    await expect(store.set('k', 1, 0)).rejects.toBeInstanceOf(StoreWriteError);
    await expect(store.set('k', 1, -5)).rejects.toBeInstanceOf(StoreWriteError);
    expect(await store.get('k')).toBeUndefined();
  });

  it('loses no increment when 100 callers update one key at once', async () => {
    const { store, reopen } = await engine.open();
    const results = await Promise.all(Array.from({ length: 100 }, () => store.update<number>('counter', (n) => (n ?? 0) + 1)));
    expect(results.map((r) => r.after).sort((a, b) => a! - b!)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(await (await reopen()).get('counter')).toBe(100);
  });

  it('gives a compare-and-set to exactly one of many callers', async () => {
    const { store } = await engine.open();
    const wins = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const { before, after } = await store.update<string>('owner', (cur) => (cur === undefined ? `caller-${i}` : undefined));
        return before === undefined && after === `caller-${i}`;
      }),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
  });

  it('keeps going after an update function throws, and leaves the key unchanged', async () => {
    const { store } = await engine.open();
    await store.set('k', 1);
    const failing = store.update<number>('k', () => {
      throw new Error('boom');
    });
    const next = store.update<number>('k', (n) => (n ?? 0) + 1);
    await expect(failing).rejects.toThrow('boom');
    await expect(failing).rejects.not.toBeInstanceOf(StoreWriteError);
    expect((await next).after).toBe(2);
    expect(await store.update<number>('k', () => undefined)).toEqual({ before: 2, after: 2 });
    expect(await store.update<number>('never-written', () => undefined)).toEqual({ before: undefined, after: undefined });
    expect(await store.get('never-written')).toBeUndefined();
  });

  it('increment adds atomically from zero, and the total is there for the next handle', async () => {
    const { store, reopen } = await engine.open();
    const totals = await Promise.all(Array.from({ length: 60 }, () => store.increment('tokens', 7)));
    expect(totals.sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => (i + 1) * 7));
    const other = await reopen();
    expect(await other.get('tokens')).toBe(420);
    expect(await other.increment('tokens', 0.5)).toBe(420.5);
    await store.set('text', 'not a number');
    expect(await store.increment('text', 2)).toBe(2); // a value that is not a count starts again
  });

  it('increment keeps the expiry set when the key was created', async () => {
    if (engine.name === 'memory') return; // its clock is injected: covered in test/access/counters.test.ts
    const date = fakeDate();
    const { store } = await engine.open();
    expect(await store.increment('window', 1, 1_000)).toBe(1);
    date.advance(600);
    expect(await store.increment('window', 1, 1_000)).toBe(2); // would push the expiry out if it reset it
    date.advance(600);
    expect(await store.get('window')).toBeUndefined();
    expect(await store.increment('window', 1, 1_000)).toBe(1);
  });

  it('fails writes loudly once closed', async () => {
    const { store } = await engine.open();
    await store.close();
    await expect(store.set('k', 1)).rejects.toBeInstanceOf(Error);
  });
});

describe.skipIf(!pgUrl)('postgres store across instances', () => {
  it('is atomic across two instances: 2 × 50 concurrent increments give 100, and one CAS winner', async () => {
    const { store: a, reopen } = await postgres.open();
    const b = await reopen();
    await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).update<number>('counter', (n) => (n ?? 0) + 1)));
    expect(await a.get('counter')).toBe(100);
    const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).update<string>('claim', (c) => (c ? undefined : `x${i}`))));
    expect(claims.filter((c) => c.before === undefined && c.after !== undefined)).toHaveLength(1);
    const totals = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).increment('tokens', 3)));
    expect(Math.max(...totals)).toBe(300);
    expect(new Set(totals).size).toBe(100);
  });

  it('creates its schema once when two instances start together, and records the version', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const [a, b] = await Promise.all([createPostgresStore({ url: schema.url }), createPostgresStore({ url: schema.url })]);
    cleanups.push(() => a.close(), () => b.close());
    const rows = await a.pool.query<{ version: number }>('SELECT version FROM hermes_schema');
    expect(rows.rows).toEqual([{ version: SCHEMA_VERSION }]);
    await a.set('k', 'v');
    expect(await b.get('k')).toBe('v');
  });

  it('refuses a database whose schema is newer than this code, saying what to do', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const first = await createPostgresStore({ url: schema.url });
    await first.pool.query('UPDATE hermes_schema SET version = $1', [SCHEMA_VERSION + 1]);
    await first.close();
    const opening = createPostgresStore({ url: schema.url });
    await expect(opening).rejects.toBeInstanceOf(StartupRefusal);
    await expect(opening).rejects.toThrow(new RegExp(`schema version ${SCHEMA_VERSION + 1}, newer than this hermes \\(${SCHEMA_VERSION}\\)`));
  });

  it('says where it could not connect, without the password', async () => {
    const u = new URL(pgUrl!);
    u.password = 'sekrit-pass';
    u.port = String(await closedPort());
    const failure = await createPostgresStore({ url: u.toString(), queryTimeoutMs: 2_000 }).then(() => undefined, (e: unknown) => e as Error);
    expect(failure?.message).toMatch(/cannot open the PostgreSQL store at 127\.0\.0\.1:\d+\/\w+/);
    expect(failure?.message).not.toContain('sekrit-pass');
  });

  it('survives the server cutting its connections: a failure is a StoreWriteError, and the next call reconnects', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const u = new URL(schema.url);
    u.searchParams.set('application_name', schema.schema);
    const store = await createPostgresStore({ url: u.toString() });
    cleanups.push(() => store.close());
    await store.set('k', 1);
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    try {
      const cut = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [schema.schema]);
      expect(cut.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    const first = await store.update<number>('k', (n) => (n ?? 0) + 1).then(() => 'ok', (e: unknown) => e);
    if (first !== 'ok') expect(first).toBeInstanceOf(StoreWriteError);
    await store.update<number>('k', (n) => (n ?? 0) + 1);
    expect(await store.get('k')).toBeGreaterThanOrEqual(2);
  });
});

async function closedPort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
