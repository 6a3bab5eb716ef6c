import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFailed } from 'vitest';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { botEnv, crashModel, crashSeed, crashTestLifecycle, freePort, seededRandom } from './crash-rig.js';
import { SlackCrashRun, type Instance } from './slack-burst.js';

/**
 * The crash test of the durable core (DESIGN.md "A durable core"), Slack: the compiled bot, one
 * process on its SQLite file, is killed with SIGKILL at a random moment of each burst of mentions
 * (3 × 20, some needing approval) while approval clicks arrive, and started again. Afterwards:
 * every mention Slack was told we received (a 200) is answered or reported interrupted, none is
 * answered twice, no approved webhook runs twice, and no work row or receipt is left. The plan's
 * seed is printed on failure; HERMES_CRASH_SEED repeats it (docs/state-and-recovery.md).
 */
const BURSTS = 3;
const BURST_SIZE = 20;

const cleanups = crashTestLifecycle();

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
    const left = { work: db.prepare('select count(*) as n from hermes_work').get() as { n: number }, receipts: db.prepare('select count(*) as n from hermes_receipt where done_at is null').get() as { n: number } };
    db.close();

    const { summary, problems } = run.judge();
    console.log(`crash test (Slack, SQLite, seed ${seed}): ${summary}`);
    if (problems.length && process.env.HERMES_CRASH_LOGS) await writeFile(process.env.HERMES_CRASH_LOGS, run.logs());
    expect(problems).toEqual([]);
    expect(left).toEqual({ work: { n: 0 }, receipts: { n: 0 } });
    expect(run.kills).toBe(BURSTS);
    expect(run.mentions).toHaveLength(BURSTS * BURST_SIZE);
  });
});
