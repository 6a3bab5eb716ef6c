import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type { Tables } from '../store/db-schema.js';
import { isPostgresUrl, storeFilePath } from '../store/open-store.js';
import { feedbackReader, type FeedbackReader } from './feedback-store.js';

/**
 * The votes for a command line (`npm run stats`, `npm run eval -- --from-feedback`) while the bot
 * may be running: the SQLite file opened read-only (the bot owns it and keeps writing; WAL lets
 * a reader in), or a small pool on the shared PostgreSQL database. Nothing is migrated or
 * written. `undefined`: there is no database yet, or it has no votes table (an older hermes).
 */
export interface OpenedFeedback {
  reader: FeedbackReader;
  where: string;
  close(): Promise<void>;
}

/** How long a command line waits for PostgreSQL before giving up. */
const PG_CONNECT_TIMEOUT_MS = 10_000;

export async function openFeedbackForReading(env: Record<string, string | undefined>, cwd: string): Promise<OpenedFeedback | undefined> {
  const dataDir = path.resolve(cwd, env.HERMES_DATA_DIR?.trim() || './data');
  const storeUrl = env.HERMES_STORE_URL?.trim() || undefined;
  if (isPostgresUrl(storeUrl)) {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: storeUrl, max: 1, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS, statement_timeout: PG_CONNECT_TIMEOUT_MS });
    const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
    try {
      const { rows } = await sql<{ t: string | null }>`select to_regclass('hermes_feedback')::text as t`.execute(db);
      if (!rows[0]?.t) {
        await db.destroy();
        return undefined;
      }
    } catch (err) {
      await db.destroy().catch(() => undefined);
      throw err;
    }
    return { reader: feedbackReader(db), where: 'the PostgreSQL database (HERMES_STORE_URL)', close: () => db.destroy() };
  }
  const file = storeFilePath({ dataDir, storeUrl });
  if (!existsSync(file)) return undefined;
  const conn = new Database(file, { readonly: true, fileMustExist: true });
  const table = conn.prepare(`select name from sqlite_master where type = 'table' and name = 'hermes_feedback'`).get();
  if (!table) {
    conn.close();
    return undefined;
  }
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: conn }) });
  return { reader: feedbackReader(db), where: file, close: () => db.destroy() };
}
