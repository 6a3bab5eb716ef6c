import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Store } from './store.js';
import { createSqliteStore } from './sqlite-store.js';

const SQLITE_PREFIX = 'sqlite://';

/** Where the SQLite file lives: `sqlite:///abs/path.sqlite` wins, else HERMES_DATA_DIR/hermes.sqlite. */
export function storeFilePath(config: Pick<Config, 'dataDir' | 'storeUrl'>): string {
  const url = config.storeUrl;
  if (url === undefined || url === '') return path.join(config.dataDir, 'hermes.sqlite');
  if (!url.startsWith(SQLITE_PREFIX) || url.length === SQLITE_PREFIX.length) {
    throw new Error(`HERMES_STORE_URL=${JSON.stringify(url)} is not supported: use sqlite:///absolute/path/to/file.sqlite`);
  }
  return path.resolve(config.dataDir, url.slice(SQLITE_PREFIX.length));
}

/** Opens the configured store. Today only SQLite; other Keyv adapters plug in here later. */
export function openStore(config: Pick<Config, 'dataDir' | 'storeUrl'>, log: Logger): Promise<Store> {
  const file = storeFilePath(config);
  log.info({ file }, 'opening store');
  return createSqliteStore({ file, log });
}
