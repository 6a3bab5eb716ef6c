import type { Pool } from 'pg';
import { StartupRefusal } from '../../basics/startup-refusal.js';

/**
 * The PostgreSQL schema, as numbered steps applied in order at start. A step is never edited once
 * released: a change is a new step. `hermes_schema` holds the number of the last step applied, so
 * an older hermes started against a database a newer one migrated refuses instead of writing rows
 * it does not understand.
 */
interface Migration {
  version: number;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    // Values are JSON text (as in SQLite); NULL marks a row an update() is creating.
    // expires_at is epoch milliseconds; NULL = no TTL.
    sql: `
      CREATE TABLE hermes_kv (key text PRIMARY KEY, value text, expires_at bigint);
      CREATE INDEX hermes_kv_expires ON hermes_kv (expires_at) WHERE expires_at IS NOT NULL;`,
  },
  {
    version: 2,
    // The durable inbox of session work (messages, approval continuations) shared by every
    // instance, in arrival order per session; and named leases (a session's turn slot, the
    // Discord gateway connection) with an expiry in database time, so clocks never disagree.
    sql: `
      CREATE TABLE hermes_inbox (
        seq bigserial PRIMARY KEY,
        id text NOT NULL UNIQUE,
        session_key text NOT NULL,
        job text NOT NULL,
        accepted_by text NOT NULL,
        accepted_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz
      );
      CREATE INDEX hermes_inbox_session ON hermes_inbox (session_key, seq);
      CREATE TABLE hermes_lease (
        name text PRIMARY KEY,
        holder text NOT NULL,
        expires_at timestamptz NOT NULL
      );`,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** Any constant works; it only has to be the same in every instance. ('hermes' in ASCII.) */
const MIGRATION_LOCK = 0x6865726d6573;

/**
 * Brings the database to SCHEMA_VERSION. Instances starting together take an advisory lock, so
 * one migrates and the others then find the work done. Each step commits with its version.
 */
export async function migrate(pool: Pool): Promise<{ from: number; to: number }> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS hermes_schema (id int PRIMARY KEY DEFAULT 1 CHECK (id = 1), version int NOT NULL)');
      const rows = await client.query<{ version: number }>('SELECT version FROM hermes_schema');
      const from = rows.rows[0]?.version ?? 0;
      if (from > SCHEMA_VERSION) throw schemaTooNew(from);
      for (const step of MIGRATIONS) {
        if (step.version <= from) continue;
        await client.query('BEGIN');
        try {
          await client.query(step.sql);
          await client.query(
            'INSERT INTO hermes_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = excluded.version',
            [step.version],
          );
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new Error(`PostgreSQL schema step ${step.version} failed: ${(err as Error).message}`, { cause: err });
        }
      }
      return { from, to: Math.max(from, SCHEMA_VERSION) };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}

function schemaTooNew(found: number): StartupRefusal {
  return new StartupRefusal(
    `the PostgreSQL database in HERMES_STORE_URL has schema version ${found}, newer than this hermes (${SCHEMA_VERSION}): ` +
      'a newer hermes has migrated it. Run that version (or newer) against it; an older one must not write there.',
  );
}
