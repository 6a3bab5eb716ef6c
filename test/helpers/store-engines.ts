import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createPgPool } from '../../src/state/store/postgres-store.js';
import { engineWanted, freshSchema, postgresForTests } from './postgres.js';

/** The operational tables at a fresh location, as one test needs them. */
export interface StorePlace {
  database: OpenedDatabase;
  /** Another handle on the same tables: a restart, or on PostgreSQL another instance (its own pool). */
  reopen(): Promise<OpenedDatabase>;
}

export interface StoreEngine {
  name: 'sqlite' | 'postgres';
  open(): Promise<StorePlace>;
}

/**
 * The engines a store test written once for both runs on (BOTH_ENGINES in vitest.config.ts): a
 * SQLite file, and the real PostgreSQL in a schema of its own when this project runs it. What
 * `open()` makes is closed and removed by `cleanups`, which the test file runs in reverse after
 * each test (so its own later cleanups, a queue on the tables, run before the tables close).
 */
export async function storeEngines(prefix: string, cleanups: Array<() => Promise<void>>): Promise<StoreEngine[]> {
  const pgUrl = await postgresForTests();
  const tracked = async (open: () => Promise<OpenedDatabase>) => {
    const db = await open();
    cleanups.push(() => db.close());
    return db;
  };
  const engines: StoreEngine[] = [
    {
      name: 'sqlite',
      async open() {
        const dir = await mkdtemp(path.join(os.tmpdir(), `hermes-${prefix}-`));
        cleanups.push(() => rm(dir, { recursive: true, force: true }));
        const file = path.join(dir, 'hermes.sqlite');
        const reopen = () => tracked(() => openSqliteDatabase(file));
        return { database: await reopen(), reopen };
      },
    },
  ];
  if (pgUrl) {
    engines.push({
      name: 'postgres',
      async open() {
        const schema = await freshSchema(pgUrl);
        cleanups.push(() => schema.drop());
        const reopen = () =>
          tracked(() => {
            const pool = createPgPool(schema.url, { max: 4 });
            cleanups.push(() => pool.end());
            return openPostgresDatabase(pool);
          });
        return { database: await reopen(), reopen };
      },
    });
  }
  return engines.filter((e) => engineWanted(e.name));
}
