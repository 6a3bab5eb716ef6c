import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { botEnv, type BotProcess, crashTestLifecycle, freePort, lastUserText, startBot, waitUntil } from './crash-rig.js';

/**
 * A steering message is durable like any accepted message (HERMES_BUSY_MODE=steer, the default).
 * The bot, as an operator runs it on SQLite, accepts a thread reply while that thread's turn is in
 * its first model call — so the reply is waiting to be taken in before the next call, not yet part
 * of the turn — and is killed with -9. After the restart the cut-off turn is reported interrupted
 * and the steering message is answered, once. (The other crash point, a message already taken in
 * when the bot dies, is test/cluster/kill-instance.e2e.test.ts.)
 */
const cleanups = crashTestLifecycle();

describe('kill -9 with a steering message accepted but not yet taken in', () => {
  it('answers the steering message after the restart, once', { timeout: 170_000 }, async () => {
    const [slack, web, dataDir] = await Promise.all([startFakeSlack(), startFakeWeb(), mkdtemp(path.join(os.tmpdir(), 'hermes-crash-steer-'))]);
    // The first request of the first turn outlives the bot; everything else is answered at once.
    const ai = await startFakeOpenAI({ handler: (req, i) => (i === 0 ? { text: 'never seen', delayMs: 120_000 } : { text: `answer to ${lastUserText(req)}` }) });
    cleanups.push(() => Promise.all([slack.close(), web.close(), ai.close()]), () => rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const env = { ...botEnv(ai.url, web.port, dataDir), HERMES_BUSY_MODE: 'steer', SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port) };
    let bot: BotProcess = startBot('bot#1', env);
    cleanups.push(async () => bot.kill9());
    await bot.ready(90_000);
    const events = `http://127.0.0.1:${port}/slack/events`;

    const ts = slack.nextTs();
    const mention = await slack.sendEvent(events, { type: 'app_mention', channel: 'C0STEER', user: 'U0ASK', text: `<@${slack.botUserId}> research the outage`, ts });
    expect(mention.status).toBe(200);
    await waitUntil(() => ai.requests.length === 1, 60_000, () => `the first model call never came:\n${bot.output().slice(-3000)}`);
    // Acknowledged (200) means accepted durably: the message is in the inbox before Slack hears back.
    const steer = await slack.sendEvent(events, { type: 'message', channel_type: 'channel', channel: 'C0STEER', user: 'U0OTHER', text: 'and include the database logs', ts: slack.nextTs(), thread_ts: ts });
    expect(steer.status).toBe(200);
    // Not taken in yet: that happens before the turn's next model call, which never comes.
    expect(slack.callsTo('reactions.add').filter((c) => c.args.name === 'eyes')).toEqual([]);
    await bot.kill9();

    bot = startBot('bot#2', env);
    await bot.ready(90_000);
    const inThread = () => slack.posts({ channel: 'C0STEER', thread_ts: ts }).map((p) => p.text);
    await waitUntil(() => inThread().some((t) => t.includes('and include the database logs')), 60_000, () => `the steering message was not answered: ${JSON.stringify(inThread())}\n${bot.output().slice(-3000)}`);
    expect(await bot.stop()).toBe(0);
    expect(inThread()).toEqual([RESTART_INTERRUPTED, 'answer to and include the database logs']);
    // The steering message reached the model once, after the restart.
    expect(ai.requests.filter((r) => lastUserText(r) === 'and include the database logs')).toHaveLength(1);
  });
});
