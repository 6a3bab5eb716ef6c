import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { ensureBuilt } from '../helpers/ensure-build.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';
import { botEnv, crashModel, crashSeed, freePort, lastUserText, seededRandom, waitUntil } from './crash-rig.js';
import { CHANNEL, SlackCrashRun, type Instance } from './slack-burst.js';

/**
 * The crash test on PostgreSQL: two instances of the compiled bot share one database, Slack
 * deliveries (and clicks) go to either, and one of them is killed with SIGKILL at a random moment
 * of each burst (3 × 20 mentions) and started again. The other takes over the killed one's work
 * once its claims run out. Judged as on SQLite (kill-burst.e2e.test.ts). Then ordering: a thread's
 * mentions, posted a few milliseconds apart and delivered to either instance, are answered in the
 * order they were posted, in each of 10 runs. HERMES_CRASH_SEED repeats a failed run's plan.
 */
const pgUrl = await postgresForTests();
const BURSTS = 3;
const BURST_SIZE = 20;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});
beforeAll(async () => {
  await ensureBuilt();
}, 300_000);

async function twoInstances(seed: number, maxDelayMs: number) {
  const schema = await freshSchema(pgUrl!);
  const [slack, web] = await Promise.all([startFakeSlack(), startFakeWeb()]);
  const ai = await startFakeOpenAI({ handler: crashModel(web.url('/sink'), seed, maxDelayMs) });
  cleanups.push(() => schema.drop(), () => Promise.all([slack.close(), web.close(), ai.close()]));
  const instances: Instance[] = [];
  for (const name of ['a', 'b']) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `hermes-crash-pg-${name}-`));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const inst: Instance = {
      name,
      port,
      up: false,
      env: { ...botEnv(ai.url, web.port, dataDir), HERMES_STORE_URL: schema.url, SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port) },
    };
    cleanups.push(async () => inst.proc?.kill9());
    instances.push(inst);
  }
  return { schema, slack, web, ai, instances };
}

/** Rows left in the shared tables once both instances stopped. */
async function leftOver(url: string): Promise<{ work: number; receipts: number }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const work = await client.query<{ n: string }>('select count(*) as n from hermes_work');
    const receipts = await client.query<{ n: string }>('select count(*) as n from hermes_receipt');
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
    const { schema, slack, web, instances } = await twoInstances(seed, 400);
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

  it("answers a thread's mentions in the order they were posted, delivered to either instance, in each of 10 runs", { timeout: 170_000 }, async () => {
    const seed = crashSeed();
    onTestFailed(() => console.error(`crash test seed: ${seed} (repeat with HERMES_CRASH_SEED=${seed})`));
    const rnd = seededRandom(seed);
    const live = seededRandom(seed + 1);
    const { slack, web, ai, instances } = await twoInstances(seed, 60);
    const run = new SlackCrashRun(slack, web, instances, rnd, live);
    await Promise.all(instances.map((i) => run.start(i)));
    const RUNS = 10;
    const PER_THREAD = 6;
    let crossed = 0;
    for (let r = 1; r <= RUNS; r++) {
      const root = slack.seedMessage(CHANNEL, { user: 'U0CRASH', text: `ordering run ${r}` });
      const tags = Array.from({ length: PER_THREAD }, (_, k) => `o${r}-${k + 1}`);
      const sent: Array<Promise<number>> = [];
      let last = -1;
      for (const tag of tags) {
        const to = live.int(0, 1);
        if (last !== -1 && to !== last) crossed++;
        last = to;
        const event = { type: 'app_mention', channel: CHANNEL, user: 'U0CRASH', text: `<@${slack.botUserId}> ${tag}`, ts: slack.nextTs(), thread_ts: root };
        sent.push(slack.sendEvent(`http://127.0.0.1:${instances[to]!.port}/slack/events`, event).then((res) => res.status));
        await new Promise((res) => setTimeout(res, rnd.int(0, 30)));
      }
      expect(await Promise.all(sent)).toEqual(tags.map(() => 200));
      const answers = () => slack.posts({ channel: CHANNEL, thread_ts: root }).map((p) => p.text);
      await waitUntil(() => answers().length >= PER_THREAD, 30_000, () => `run ${r}: answers so far ${JSON.stringify(answers())}`);
      const calls = ai.requests.map(lastUserText).filter((t) => t.startsWith(`o${r}-`));
      expect({ run: r, answers: answers(), modelCalls: calls }).toEqual({ run: r, answers: tags.map((t) => `answer to ${t}`), modelCalls: tags });
    }
    for (const i of instances) expect(await i.proc!.stop()).toBe(0);
    console.log(`ordering (PostgreSQL, 2 instances, seed ${seed}): ${RUNS} runs × ${PER_THREAD} mentions in one thread each, ${crossed} consecutive pairs delivered to different instances, all answered in posting order`);
  });
});
