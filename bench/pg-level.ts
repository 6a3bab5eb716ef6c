import { freshSchema } from '../test/helpers/postgres.js';
import { runThroughput } from './throughput.js';

/**
 * One throughput level on PostgreSQL, without the rest of the instances section: for profiling and
 * for pairs of runs. `PG_LEVEL_INSTANCES=2 PG_LEVEL_SESSIONS=500 PG_LEVEL_ROUNDS=4 tsx bench/pg-level.ts`
 * against HERMES_TEST_PG_URL (a fresh schema per run); prints the row and the errors as JSON.
 */
const url = process.env.HERMES_TEST_PG_URL;
if (!url) throw new Error('HERMES_TEST_PG_URL is not set');
const instances = Number(process.env.PG_LEVEL_INSTANCES ?? 1);
const sessions = Number(process.env.PG_LEVEL_SESSIONS ?? 50);
const rounds = Number(process.env.PG_LEVEL_ROUNDS ?? 10);
const schema = await freshSchema(url);
try {
  const r = await runThroughput({ sessions: [sessions], rounds: () => rounds, modelLatencyMs: 200 }, (l) => console.error(l), {
    label: `PostgreSQL, ${instances} instance${instances > 1 ? 's' : ''}`,
    instances,
    storeUrl: schema.url,
  });
  console.log(JSON.stringify({ instances, sessions, rounds, row: r.rows[0], errors: r.errors }, null, 1));
} finally {
  await schema.drop().catch(() => undefined);
}
