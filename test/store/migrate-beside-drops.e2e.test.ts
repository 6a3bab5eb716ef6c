import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgresDatabase } from '../../src/state/store/database.js';
import { createPgPool } from '../../src/state/store/postgres-store.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * Kysely's migrator looks for its bookkeeping tables by reading the catalog of every schema in
 * the database, calling functions by schema name on each row it sees. A schema somebody else drops
 * during that read (another deployment's, or a parallel test's) made the read fail with "schema …
 * does not exist", and so our start (seen once in a fresh-clone CI run, in a test whose schema was
 * untouched). The store retries the migration when the missing schema is not its own. Here other
 * schemas with tables are created and dropped in a tight loop while fresh schemas are migrated.
 */
const pgUrl = await postgresForTests();
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe.skipIf(!pgUrl)('migrating beside schemas being dropped (PostgreSQL)', () => {
  it('opens every fresh schema while other schemas come and go', { timeout: 120_000 }, async () => {
    let churning = true;
    const churn = async (n: number) => {
      const c = new pg.Client({ connectionString: pgUrl!, connectionTimeoutMillis: 5_000 });
      await c.connect();
      let rounds = 0;
      try {
        // Bounded: the loop stops when the migrations are done, or after 5,000 rounds.
        while (churning && rounds < 5_000) {
          const name = `hermes_churn_${n}_${rounds++}`;
          await c.query(`create schema ${name}; create table ${name}.t (id serial primary key, a text, b text, c text)`);
          await c.query(`drop schema ${name} cascade`);
        }
      } finally {
        await c.end();
      }
      return rounds;
    };
    const churners = [churn(1), churn(2), churn(3)];
    const failures: string[] = [];
    try {
      for (let i = 0; i < 25; i++) {
        const schema = await freshSchema(pgUrl!);
        cleanups.push(() => schema.drop());
        const pool = createPgPool(schema.url);
        try {
          const db = await openPostgresDatabase(pool);
          await db.close();
        } catch (err) {
          failures.push((err as Error).message);
        } finally {
          await pool.end().catch(() => undefined);
        }
      }
    } finally {
      churning = false;
    }
    const rounds = await Promise.all(churners);
    expect(rounds.every((r) => r > 0)).toBe(true);
    expect(failures).toEqual([]);
  });
});
