import { startThrowawayPostgres } from './helpers/start-postgres.js';

/**
 * Vitest global setup: when HERMES_TEST_PG_URL is not set but PostgreSQL is installed, start a
 * throw-away cluster (the script CI uses) and stop it after the run, so `npm test` exercises the
 * PostgreSQL store wherever the server exists. The URL reaches the test workers through the
 * environment they are forked with. Without a server the PostgreSQL tests decide themselves:
 * fail in CI, skip locally (test/helpers/postgres.ts).
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.HERMES_TEST_PG_URL) return undefined;
  const pg = await startThrowawayPostgres();
  if ('error' in pg) {
    console.warn(pg.error);
    return undefined;
  }
  process.env.HERMES_TEST_PG_URL = pg.url;
  return () => pg.stop();
}
