import { freshSchema } from '../test/helpers/postgres.js';
import { startThrowawayPostgres } from '../test/helpers/start-postgres.js';
import { runThroughput, SQLITE_ONE, type StoreSetup, type ThroughputResult, type ThroughputSizes } from './throughput.js';

/**
 * Section 5: the Slack throughput test (section 2) on each store setup: SQLite with one instance,
 * PostgreSQL with one, PostgreSQL with two behind a round-robin balancer. Each PostgreSQL run
 * gets a fresh schema. The server is HERMES_TEST_PG_URL, else a throw-away one started like CI's.
 */
export interface InstancesResult {
  setups: ThroughputResult[];
  errors: string[];
  postgres: string;
}

export async function runInstances(given: ThroughputSizes, log: (line: string) => void): Promise<InstancesResult> {
  const errors: string[] = [];
  // BENCH_INSTANCES_SESSIONS=1,50,500 adds levels (two instances against one at 500 sessions).
  const levels = (process.env.BENCH_INSTANCES_SESSIONS ?? '').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  const sizes: ThroughputSizes = levels.length > 0 ? { ...given, sessions: levels } : given;
  let url = process.env.HERMES_TEST_PG_URL;
  let stop: (() => Promise<void>) | undefined;
  let postgres = 'HERMES_TEST_PG_URL';
  if (!url) {
    const started = await startThrowawayPostgres();
    if ('error' in started) return { setups: [], errors: [`instances: ${started.error}`], postgres: 'none' };
    url = started.url;
    stop = started.stop;
    postgres = 'throw-away cluster (fsync off, as in CI)';
  }
  const setups: ThroughputResult[] = [];
  try {
    const plan: Array<StoreSetup | { label: string; instances: number; pg: true }> = [
      SQLITE_ONE,
      { label: 'PostgreSQL, 1 instance', instances: 1, pg: true },
      { label: 'PostgreSQL, 2 instances', instances: 2, pg: true },
    ];
    for (const p of plan) {
      const schema = 'pg' in p ? await freshSchema(url) : undefined;
      try {
        const r = await runThroughput(sizes, log, { label: p.label, instances: p.instances, storeUrl: schema?.url });
        setups.push(r);
        errors.push(...r.errors.map((e) => `${p.label}: ${e}`));
      } finally {
        await schema?.drop().catch(() => undefined);
      }
    }
  } finally {
    await stop?.();
  }
  return { setups, errors, postgres };
}
