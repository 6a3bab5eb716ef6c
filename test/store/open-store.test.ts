import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { openStore, storeFilePath } from '../../src/store/open-store.js';

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
    const store = await openStore({ dataDir }, createLogger('silent'));
    await store.set('k', 'v');
    await store.close();
    expect((await stat(path.join(dataDir, 'hermes.sqlite'))).isFile()).toBe(true);
  });
});
