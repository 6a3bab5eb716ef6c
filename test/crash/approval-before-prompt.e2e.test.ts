import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { botEnv, type BotProcess, crashModel, crashTestLifecycle, freePort, startBot, waitUntil } from './crash-rig.js';

/**
 * A crash point between an approval request being stored and its turn's work row being done: the
 * bot is killed while the prompt's post is on its way. After the restart the turn is reported
 * interrupted ("send it again"), so its request must not stay open: a click on the prompt that
 * did reach Slack is answered "already decided" and the action never runs. (It used to stay
 * pending: a click ran the webhook and went on with a turn the person had been told was over, and
 * a request whose prompt never arrived waited unseen until it expired.)
 */
const cleanups = crashTestLifecycle();

describe('kill -9 while an approval prompt is being posted', () => {
  it('cancels the request of the interrupted turn: a later click is answered, the action never runs', { timeout: 170_000 }, async () => {
    const [slack, web, dataDir] = await Promise.all([startFakeSlack(), startFakeWeb(), mkdtemp(path.join(os.tmpdir(), 'hermes-crash-prompt-'))]);
    const model = crashModel(web.url('/sink'), 1, 20);
    const ai = await startFakeOpenAI({
      handler: (req, i) => {
        const reply = model(req, i);
        // The next post is the prompt: Slack records it, and answers only long after the kill.
        if ('toolCalls' in reply) slack.delayNext('chat.postMessage', 60_000);
        return reply;
      },
    });
    cleanups.push(() => Promise.all([slack.close(), web.close(), ai.close()]), () => rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const env = { ...botEnv(ai.url, web.port, dataDir), SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port) };
    let bot: BotProcess = startBot('bot#1', env);
    cleanups.push(async () => bot.kill9());
    await bot.ready(90_000);
    slack.setUser('U0CRASH', 'Crash Tester');
    const events = `http://127.0.0.1:${port}/slack/events`;
    const ts = slack.nextTs();
    const res = await slack.sendEvent(events, { type: 'app_mention', channel: 'C0CRASH', user: 'U0CRASH', text: `<@${slack.botUserId}> approve p1`, ts });
    expect(res.status).toBe(200);
    const promptCall = () => slack.callsTo('chat.postMessage').find((c) => JSON.stringify(c.args.blocks ?? '').includes('hermes_approve'));
    await waitUntil(() => promptCall() !== undefined, 60_000, () => `no approval prompt posted:\n${bot.output().slice(-3000)}`);
    await bot.kill9();

    bot = startBot('bot#2', env);
    await bot.ready(90_000);
    const inThread = () => slack.posts({ channel: 'C0CRASH', thread_ts: ts }).map((p) => p.text);
    await waitUntil(() => inThread().includes(RESTART_INTERRUPTED), 60_000, () => `no restart notice: ${JSON.stringify(inThread())}`);

    const approvalId = /"value":"([^"]+)"/.exec(JSON.stringify(promptCall()!.args.blocks))![1]!;
    const click = await slack.sendClick(events, { actionId: 'hermes_approve', value: approvalId, userId: 'U0CRASH', channelId: 'C0CRASH', messageTs: slack.nextTs(), threadTs: ts });
    expect(click.status).toBe(200);
    const answer = () => slack.callsTo('chat.postEphemeral').map((c) => String(c.args.text ?? ''));
    await waitUntil(() => answer().length > 0, 30_000, () => `no answer to the click; thread ${JSON.stringify(inThread())}, sink ${web.received.length}`);
    expect(answer()[0]).toMatch(/already decided: cancelled/);
    expect(web.received.filter((r) => r.path.startsWith('/sink'))).toEqual([]);
    expect(inThread().filter((t) => t.startsWith('finished'))).toEqual([]);
    expect(await bot.stop()).toBe(0);
  });
});
