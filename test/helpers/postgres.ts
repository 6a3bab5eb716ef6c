import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The real PostgreSQL server for tests: HERMES_TEST_PG_URL (`.ci/run` starts one; by hand:
 * `source .ci/postgres.sh; start_postgres`). In CI a missing or unreachable server fails the
 * file loudly; locally the PostgreSQL tests skip with the reason printed.
 */
const isCi = (): boolean => process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false' && process.env.CI !== '0';

/**
 * Which engines this test project runs for the store tests that cover both (BOTH_ENGINES in
 * vitest.config.ts): the unit project sets HERMES_TEST_ENGINES=sqlite (no server in the fast loop),
 * the e2e project HERMES_TEST_ENGINES=postgres; a file run by hand with neither runs both.
 */
export function engineWanted(name: string): boolean {
  const only = process.env.HERMES_TEST_ENGINES;
  return only === undefined || only === '' || only === name;
}

export async function postgresForTests(): Promise<string | undefined> {
  // This project leaves PostgreSQL to the other one (not a skip: the same cases run there).
  if (!engineWanted('postgres')) return undefined;
  const url = process.env.HERMES_TEST_PG_URL;
  const why = url ? await unreachable(url) : 'HERMES_TEST_PG_URL is not set';
  if (!why) return url;
  const fix = 'start one with `source .ci/postgres.sh; start_postgres` (CI: .ci/run does it)';
  if (isCi()) throw new Error(`PostgreSQL tests cannot run in CI: ${why}; ${fix}`);
  console.warn(`skipping PostgreSQL tests: ${why}; ${fix}`);
  return undefined;
}

async function unreachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000, query_timeout: 5_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (err) {
    return `PostgreSQL at HERMES_TEST_PG_URL is unreachable (${(err as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A schema of its own for one test (tests run in parallel on one database): the returned URL
 * puts it first on the search path, so the store's tables are created there. drop() removes it.
 */
export async function freshSchema(baseUrl: string): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const schema = `hermes_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const u = new URL(baseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: u.toString(),
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 5_000 });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}
