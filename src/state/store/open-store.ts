import path from 'node:path';
import type { Config } from '../../settings/config.js';
import type { Logger } from '../../basics/log.js';
import type { Store } from './store.js';
import { createSqliteStore } from './sqlite-store.js';
import { acquireSqliteOwnerLock } from './sqlite-owner-lock.js';
import type { PostgresStore } from './postgres-store.js';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from './database.js';

const SQLITE_PREFIX = 'sqlite://';

export function isPostgresUrl(url: string | undefined): url is string {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

/** Where the SQLite file lives: `sqlite:///abs/path.sqlite` wins, else HERMES_DATA_DIR/hermes.sqlite. */
export function storeFilePath(config: Pick<Config, 'dataDir' | 'storeUrl'>): string {
  const url = config.storeUrl;
  if (url === undefined || url === '') return path.join(config.dataDir, 'hermes.sqlite');
  if (!url.startsWith(SQLITE_PREFIX) || url.length === SQLITE_PREFIX.length) {
    throw new Error(`HERMES_STORE_URL=${JSON.stringify(url)} is not supported: use sqlite:///absolute/path/to/file.sqlite or postgres://user:password@host:5432/database`);
  }
  return path.resolve(config.dataDir, url.slice(SQLITE_PREFIX.length));
}

/**
 * The opened store. `shared` is set on PostgreSQL: several instances use the database at once,
 * so nothing may be cached in this process and the cluster parts (inbox, leases) run on its pool.
 */
export interface OpenedStore {
  /** Key-value: user facts and the state not moved into tables yet. */
  store: Store;
  /** The operational tables, in the same file or database. */
  database: OpenedDatabase;
  shared?: PostgresStore;
}

/**
 * Opens the configured store: PostgreSQL for `postgres://` URLs, else the SQLite file, which this
 * process then owns (a second instance on it refuses to start; see sqlite-owner-lock.ts).
 */
export async function openStore(config: Pick<Config, 'dataDir' | 'storeUrl'>, log: Logger): Promise<OpenedStore> {
  if (isPostgresUrl(config.storeUrl)) {
    // The PostgreSQL driver loads only for a postgres:// URL: a bot on SQLite never needs it.
    const { createPostgresStore, describePgUrl } = await import('./postgres-store.js');
    log.info({ database: describePgUrl(config.storeUrl) }, 'opening store (PostgreSQL)');
    const store = await createPostgresStore({ url: config.storeUrl, log });
    try {
      return { store, shared: store, database: await openPostgresDatabase(store.pool, log, store.reserved) };
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  }
  const file = storeFilePath(config);
  log.info({ file }, 'opening store');
  const lock = await acquireSqliteOwnerLock(file);
  try {
    const store = await createSqliteStore({ file, log });
    const database = await openSqliteDatabase(file, log).catch(async (err: unknown) => {
      await store.close().catch(() => undefined);
      throw err;
    });
    return {
      store: {
        ...store,
        async close() {
          try {
            await database.close();
            await store.close();
          } finally {
            await lock.release();
          }
        },
      },
      database,
    };
  } catch (err) {
    await lock.release();
    throw err;
  }
}
