import { writeFile } from 'node:fs/promises';
import pg from 'pg';
import { describe, expect, it, onTestFailed } from 'vitest';
import { postgresForTests } from '../helpers/postgres.js';
import { crashSeed, crashTestLifecycle, seededRandom } from './crash-rig.js';
import { SlackCrashRun, slackCluster } from './slack-burst.js';

/**
 * The crash test on PostgreSQL, Slack: two instances of the compiled bot share one database,
 * deliveries (and clicks) go to either, and one of them is killed with SIGKILL at a random moment
 * of each burst (3 × 20 mentions, some needing approval) and started again; the other takes over
 * the killed one's claimed work once its claims run out. Judged as on SQLite
 * (kill-burst-slack.e2e.test.ts). HERMES_CRASH_SEED repeats a failed run's plan.
 */
const pgUrl = await postgresForTests();
const BURSTS = 3;
const BURST_SIZE = 20;

const cleanups = crashTestLifecycle();

/** Rows left in the shared tables once both instances stopped. */
async function leftOver(url: string): Promise<{ work: number; receipts: number }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const work = await client.query<{ n: string }>('select count(*) as n from hermes_work');
    const receipts = await client.query<{ n: string }>('select count(*) as n from hermes_receipt where done_at is null');
    return { work: Number(work.rows[0]!.n), receipts: Number(receipts.rows[0]!.n) };
  } finally {
    await client.end();
  }
}

describe.skipIf(!pgUrl)('two instances on PostgreSQL, kill -9 during bursts', () => {
  it('Slack over HTTP: every acknowledged mention answered or reported interrupted, none twice, no approval applied twice', { timeout: 170_000 }, async () => {
    const seed = crashSeed();
    onTestFailed(() => console.error(`crash test seed: ${seed} (repeat with HERMES_CRASH_SEED=${seed})`));
    const rnd = seededRandom(seed);
    const { schema, slack, web, instances } = await slackCluster(pgUrl!, seed, 400, cleanups);
    const run = new SlackCrashRun(slack, web, instances, rnd, seededRandom(seed + 1));
    await Promise.all(instances.map((i) => run.start(i)));
    run.startClicking();
    for (let b = 1; b <= BURSTS; b++) {
      const victim = instances[rnd.int(0, 1)]!;
      const killAfter = rnd.int(0, 2_500);
      const killed = new Promise<void>((resolve) => setTimeout(() => void run.kill(victim).then(resolve), killAfter));
      await run.burst(b, BURST_SIZE, 0.2);
      await killed;
      // Deliveries that failed on the dead instance go to the live one, as Slack's retries would.
      await run.redeliver();
      await run.start(victim);
    }
    await run.waitAllFinished(90_000);
    await run.stopClicking();
    for (const i of instances) {
      expect(await i.proc!.stop()).toBe(0);
      i.up = false;
    }
    const left = await leftOver(schema.url);
    const { summary, problems } = run.judge();
    console.log(`crash test (Slack, PostgreSQL, 2 instances, seed ${seed}): ${summary}`);
    if (problems.length && process.env.HERMES_CRASH_LOGS) await writeFile(process.env.HERMES_CRASH_LOGS, run.logs());
    expect(problems).toEqual([]);
    expect(left).toEqual({ work: 0, receipts: 0 });
    expect(run.kills).toBe(BURSTS);
  });
});
