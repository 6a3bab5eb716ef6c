import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it, onTestFailed } from 'vitest';
import { startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';
import { botEnv, crashModel, crashSeed, crashTestLifecycle, seededRandom, waitUntil } from './crash-rig.js';
import { DiscordCrashRun, type DiscordInstance } from './discord-burst.js';

/**
 * The crash test for Discord with two instances on PostgreSQL: one holds the gateway connection
 * (the lease `discord-gateway`), the other stands by and runs work rows too. Each burst (3 × 20
 * mentions in threads, approvals clicked) kills one of them at a random moment: killing the
 * holder makes the other connect within HERMES_FAILOVER_S (2 s here) and take over its claimed
 * work once the claims run out. Every accepted mention is answered or reported interrupted, once,
 * in posting order per thread; no approved webhook runs twice; nothing is left queued.
 */
const pgUrl = await postgresForTests();
const BURSTS = 3;
const BURST_SIZE = 20;

const cleanups = crashTestLifecycle();

async function query<T>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

describe.skipIf(!pgUrl)('two instances on PostgreSQL, Discord, kill -9 during bursts', () => {
  it('every accepted mention answered or reported interrupted, once, in posting order per thread; no approval applied twice', { timeout: 170_000 }, async () => {
    const seed = crashSeed();
    onTestFailed(() => console.error(`crash test seed: ${seed} (repeat with HERMES_CRASH_SEED=${seed})`));
    const rnd = seededRandom(seed);
    const schema = await freshSchema(pgUrl!);
    const [discord, web] = await Promise.all([startFakeDiscord(), startFakeWeb()]);
    const ai = await startFakeOpenAI({ handler: crashModel(web.url('/sink'), seed) });
    cleanups.push(() => schema.drop(), () => Promise.all([discord.close(), web.close(), ai.close()]));
    const instances: DiscordInstance[] = [];
    for (const name of ['a', 'b']) {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), `hermes-crash-dpg-${name}-`));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const inst: DiscordInstance = { name, up: false, env: { ...botEnv(ai.url, web.port, dataDir), HERMES_STORE_URL: schema.url, HERMES_FAILOVER_S: '2', DISCORD_TOKEN: 'discord-test-token', DISCORD_API_URL: discord.apiUrl } };
      cleanups.push(async () => inst.proc?.kill9());
      instances.push(inst);
    }
    const run = new DiscordCrashRun(discord, web, instances, rnd);
    const accepted = async () => new Set((await query<{ id: string }>(schema.url, "select id from hermes_inbound where platform = 'discord'")).map((r) => r.id));

    for (const i of instances) await run.start(i);
    run.startClicking();
    for (let b = 1; b <= BURSTS; b++) {
      const victim = instances[rnd.int(0, 1)]!;
      const killAfter = rnd.int(0, 2_500);
      const killed = new Promise<void>((resolve) => setTimeout(() => void run.kill(victim).then(resolve), killAfter));
      await run.burst(b, BURST_SIZE, 0.2);
      await killed;
      await run.start(victim);
    }
    let ids = new Set<string>();
    await waitUntil(
      async () => {
        ids = await accepted();
        return run.mentions.every((m) => !ids.has(m.id) || run.finished(m));
      },
      90_000,
      () => `accepted mentions without an answer or a restart notice: ${JSON.stringify(run.mentions.filter((m) => ids.has(m.id) && !run.finished(m)).map((m) => ({ ...m, ...run.outcome(m) })))}`,
    );
    await run.stopClicking();
    for (const i of instances) {
      expect(await i.proc!.stop()).toBe(0);
      i.up = false;
    }
    ids = await accepted();
    const [left] = await query<{ n: string }>(schema.url, 'select count(*) as n from hermes_work');

    const { summary, problems } = run.judge(ids);
    console.log(`crash test (Discord, PostgreSQL, 2 instances, seed ${seed}): ${summary}`);
    if (problems.length && process.env.HERMES_CRASH_LOGS) await writeFile(process.env.HERMES_CRASH_LOGS, run.logs());
    expect(problems).toEqual([]);
    expect(Number(left!.n)).toBe(0);
    expect(run.killedAt).toHaveLength(BURSTS);
    expect(run.mentions.filter((m) => ids.has(m.id)).length).toBeGreaterThanOrEqual((BURSTS * BURST_SIZE) / 2);
  });
});
