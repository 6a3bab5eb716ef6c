import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { openStore, storeFilePath } from '../../src/state/store/open-store.js';
import { StartupRefusal } from '../../src/basics/startup-refusal.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

const pgUrl = await postgresForTests();

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-open-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('openStore', () => {
  it('defaults to HERMES_DATA_DIR/hermes.sqlite', () => {
    expect(storeFilePath({ dataDir: '/var/hermes' })).toBe(path.join('/var/hermes', 'hermes.sqlite'));
  });

  it('takes an absolute path from sqlite:///abs/path.sqlite', () => {
    expect(storeFilePath({ dataDir: '/var/hermes', storeUrl: 'sqlite:///srv/state/bot.sqlite' })).toBe('/srv/state/bot.sqlite');
  });

  it('rejects other URL schemes with the variable name', () => {
    expect(() => storeFilePath({ dataDir: dir, storeUrl: 'redis://localhost:6379' })).toThrow(/HERMES_STORE_URL/);
  });

  it('opens a real file in the data dir', async () => {
    const dataDir = path.join(dir, 'data');
    const { store, shared } = await openStore({ dataDir }, createLogger('silent'));
    expect(shared).toBeUndefined();
    await store.set('k', 'v');
    await store.close();
    expect((await stat(path.join(dataDir, 'hermes.sqlite'))).isFile()).toBe(true);
  });

  it('refuses a second owner of one SQLite file, and lets the next one in after close', async () => {
    const dataDir = path.join(dir, 'data');
    const first = await openStore({ dataDir }, createLogger('silent'));
    const second = openStore({ dataDir }, createLogger('silent'));
    await expect(second).rejects.toBeInstanceOf(StartupRefusal);
    await expect(second).rejects.toThrow(/another hermes instance is already running on the SQLite store .*hermes\.sqlite.*PostgreSQL \(HERMES_STORE_URL=postgres/);
    await first.store.close();
    const third = await openStore({ dataDir }, createLogger('silent'));
    await third.store.set('k', 'v');
    await third.store.close();
  });

  it.skipIf(!pgUrl)('opens PostgreSQL for a postgres:// URL, shared and uncached', async () => {
    const schema = await freshSchema(pgUrl!);
    try {
      const { store, shared } = await openStore({ dataDir: dir, storeUrl: schema.url }, createLogger('silent'));
      expect(shared).toBe(store);
      await store.set('k', 'v');
      expect(await store.get('k')).toBe('v');
      await store.close();
    } finally {
      await schema.drop();
    }
  });
});
