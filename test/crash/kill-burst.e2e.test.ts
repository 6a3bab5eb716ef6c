import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { ensureBuilt } from '../helpers/ensure-build.js';
import { botEnv, crashModel, crashSeed, freePort, seededRandom, waitUntil } from './crash-rig.js';
import { DiscordCrashRun } from './discord-burst.js';
import { SlackCrashRun, type Instance } from './slack-burst.js';

/**
 * The crash test of the durable core (DESIGN.md "A durable core"): the compiled bot, one process
 * on its SQLite file, is killed with SIGKILL at random moments while bursts of mentions (3 × 20)
 * and approval clicks arrive. After it is started again: every message Slack was told we received
 * is answered or reported interrupted, none is answered twice, no approved action runs twice, and
 * nothing is left queued. The seed (HERMES_CRASH_SEED repeats a run) is printed on failure.
 */
const BURSTS = 3;
const BURST_SIZE = 20;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});
beforeAll(async () => {
  await ensureBuilt();
}, 300_000);

describe('kill -9 during bursts of mentions and clicks', () => {
  it('Slack over HTTP, SQLite: every acknowledged mention answered or reported interrupted, none twice, no approval applied twice', { timeout: 170_000 }, async () => {
    const seed = crashSeed();
    onTestFailed(() => console.error(`crash test seed: ${seed} (repeat with HERMES_CRASH_SEED=${seed})`));
    const rnd = seededRandom(seed);
    const [slack, web, dataDir] = await Promise.all([startFakeSlack(), startFakeWeb(), mkdtemp(path.join(os.tmpdir(), 'hermes-crash-slack-'))]);
    const ai = await startFakeOpenAI({ handler: crashModel(web.url('/sink'), seed) });
    cleanups.push(() => Promise.all([slack.close(), web.close(), ai.close()]), () => rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const bot: Instance = {
      name: 'bot',
      port,
      up: false,
      env: { ...botEnv(ai.url, web.port, dataDir), SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port) },
    };
    const run = new SlackCrashRun(slack, web, [bot], rnd, seededRandom(seed + 1));
    cleanups.push(async () => bot.proc?.kill9());

    await run.start(bot);
    run.startClicking();
    for (let b = 1; b <= BURSTS; b++) {
      // The kill lands anywhere from the first delivery to well after the last one was acknowledged.
      const killAfter = rnd.int(0, 2_500);
      const killed = new Promise<void>((resolve) => setTimeout(() => void run.kill(bot).then(resolve), killAfter));
      await run.burst(b, BURST_SIZE, 0.2);
      await killed;
      await run.settled();
      await run.start(bot);
      await run.redeliver();
    }
    await run.waitAllFinished(60_000);
    await run.stopClicking();
    // A clean stop, then nothing may be left: no work row, no receipt.
    expect(await bot.proc!.stop()).toBe(0);
    bot.up = false;
    const db = new Database(path.join(dataDir, 'hermes.sqlite'), { readonly: true });
    const left = { work: db.prepare('select count(*) as n from hermes_work').get() as { n: number }, receipts: db.prepare('select count(*) as n from hermes_receipt').get() as { n: number } };
    db.close();

    const { summary, problems } = run.judge();
    console.log(`crash test (Slack, SQLite, seed ${seed}): ${summary}`);
    if (problems.length && process.env.HERMES_CRASH_LOGS) await writeFile(process.env.HERMES_CRASH_LOGS, run.logs());
    expect(problems).toEqual([]);
    expect(left).toEqual({ work: { n: 0 }, receipts: { n: 0 } });
    expect(run.kills).toBe(BURSTS);
    expect(run.mentions).toHaveLength(BURSTS * BURST_SIZE);
  });

  it('Discord over the gateway, SQLite: every accepted mention answered or reported interrupted, once, in posting order per thread; no approval applied twice', { timeout: 170_000 }, async () => {
    const seed = crashSeed();
    onTestFailed(() => console.error(`crash test seed: ${seed} (repeat with HERMES_CRASH_SEED=${seed})`));
    const rnd = seededRandom(seed);
    const [discord, web, dataDir] = await Promise.all([startFakeDiscord(), startFakeWeb(), mkdtemp(path.join(os.tmpdir(), 'hermes-crash-discord-'))]);
    const ai = await startFakeOpenAI({ handler: crashModel(web.url('/sink'), seed) });
    cleanups.push(() => Promise.all([discord.close(), web.close(), ai.close()]), () => rm(dataDir, { recursive: true, force: true }));
    const run = new DiscordCrashRun(discord, web, { ...botEnv(ai.url, web.port, dataDir), DISCORD_TOKEN: 'discord-test-token', DISCORD_API_URL: discord.apiUrl }, rnd);
    cleanups.push(async () => run.proc?.kill9());
    const file = path.join(dataDir, 'hermes.sqlite');
    const accepted = () => {
      const db = new Database(file, { readonly: true });
      try {
        return new Set((db.prepare("select id from hermes_inbound where platform = 'discord'").all() as Array<{ id: string }>).map((r) => r.id));
      } finally {
        db.close();
      }
    };

    await run.start();
    run.startClicking();
    for (let b = 1; b <= BURSTS; b++) {
      const killAfter = rnd.int(0, 2_500);
      const killed = new Promise<void>((resolve) => setTimeout(() => void run.kill().then(resolve), killAfter));
      await run.burst(b, BURST_SIZE, 0.2);
      await killed;
      await run.start();
    }
    await waitUntil(() => {
      const ids = accepted();
      return run.mentions.every((m) => !ids.has(m.id) || run.finished(m));
    }, 60_000, () => `accepted mentions without an answer or a restart notice: ${JSON.stringify(run.mentions.filter((m) => accepted().has(m.id) && !run.finished(m)).map((m) => ({ ...m, ...run.outcome(m) })))}\n${run.proc?.output().slice(-3000)}`);
    await run.stopClicking();
    expect(await run.proc!.stop()).toBe(0);
    const ids = accepted();
    const db = new Database(file, { readonly: true });
    const left = (db.prepare('select count(*) as n from hermes_work').get() as { n: number }).n;
    db.close();

    const { summary, problems } = run.judge(ids);
    console.log(`crash test (Discord, SQLite, seed ${seed}): ${summary}`);
    if (problems.length && process.env.HERMES_CRASH_LOGS) await writeFile(process.env.HERMES_CRASH_LOGS, run.logs());
    expect(problems).toEqual([]);
    expect(left).toBe(0);
    expect(run.killedAt).toHaveLength(BURSTS);
    // Most of each burst reaches a live process: the test is about those, so it must have many.
    expect(run.mentions.filter((m) => ids.has(m.id)).length).toBeGreaterThanOrEqual(BURSTS * BURST_SIZE / 2);
  });
});
