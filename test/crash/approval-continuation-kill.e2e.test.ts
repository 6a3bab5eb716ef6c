import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { APIMessage } from 'discord-api-types/v10';
import { describe, expect, it } from 'vitest';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { DEFAULT_USER, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { botEnv, type BotProcess, crashTestLifecycle, lastUserText, startBot, waitUntil } from './crash-rig.js';

/**
 * Two kills in a row in an approved action's continuation, the state the Discord crash burst left
 * once (seed 1834280101: an approved mention neither answered nor reported interrupted):
 * 1. the bot is killed while the approved webhook runs: the request is left `running`;
 * 2. the next process finds it so, marks it `unknown` and goes on with the turn (the model is told
 *    the outcome is unknown), and is killed while the model answers;
 * 3. the third process claims the continuation again. Its request is `unknown` now: the turn was
 *    cut off a second time, and the person must hear of it ("I was restarted") or get the answer.
 *    It used to end the job in silence (only `done` counted as a continuation that had begun).
 */
const cleanups = crashTestLifecycle();

describe('kill -9 twice in an approved action\'s continuation', () => {
  it('the third process tells the person the turn was cut off; the webhook never runs twice', { timeout: 170_000 }, async () => {
    const [discord, web, dataDir] = await Promise.all([startFakeDiscord(), startFakeWeb(), mkdtemp(path.join(os.tmpdir(), 'hermes-crash-continuation-'))]);
    // The webhook goes to /slow, which holds it: the first process is killed while it runs.
    let answerAfterTool: 'hang' | 'answer' = 'hang';
    const ai = await startFakeOpenAI({
      handler: (req) => {
        if (req.messages.at(-1)?.role === 'tool') return answerAfterTool === 'hang' ? { hang: true } : { text: 'finished c1' };
        if (lastUserText(req) === 'approve c1') return { toolCalls: [{ name: 'send_webhook', arguments: { url: web.url('/slow'), body: { tag: 'c1' } } }] };
        return { text: `answer to ${lastUserText(req)}` };
      },
    });
    cleanups.push(() => Promise.all([discord.close(), web.close(), ai.close()]), () => rm(dataDir, { recursive: true, force: true }));
    const env = { ...botEnv(ai.url, web.port, dataDir), DISCORD_TOKEN: 'discord-test-token', DISCORD_API_URL: discord.apiUrl };
    let bot: BotProcess | undefined;
    cleanups.push(async () => bot?.kill9());
    const start = async (name: string) => {
      bot = startBot(name, env);
      await bot.ready(90_000);
      await waitUntil(() => discord.gateway.connected, 30_000, () => 'the bot did not connect to the gateway');
    };
    const thread = '530000000000000001';
    const replies = (id: string) =>
      discord.calls.filter((c) => c.method === 'POST' && /^\/channels\/\d+\/messages$/.test(c.path) && (c.body as { message_reference?: { message_id?: string } }).message_reference?.message_id === id);
    const texts = (id: string) => replies(id).map((c) => String((c.body as { content?: string }).content ?? ''));

    await start('bot#1');
    const mention = discord.sendThreadMessage({ author: DEFAULT_USER, content: 'approve c1', threadId: thread, mentionBot: true });
    const promptCall = () => replies(mention).find((c) => JSON.stringify((c.body as { components?: unknown }).components ?? []).includes('hermes:approve:'));
    await waitUntil(() => promptCall() !== undefined, 60_000, () => `no approval prompt:\n${bot!.output().slice(-3000)}`);
    const prompt = promptCall()!.response as APIMessage;
    const customId = /"custom_id":"(hermes:approve:[^"]+)"/.exec(JSON.stringify(prompt.components))![1]!;
    const click = discord.clickButton({ user: DEFAULT_USER, message: prompt, customId });
    await discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${click}/`), 30_000, 'the click acknowledgement');
    // 1. Killed while the approved webhook runs.
    await waitUntil(() => web.hits('/slow') === 1, 30_000, () => `the webhook did not start:\n${bot!.output().slice(-3000)}`);
    await bot!.kill9();

    // 2. The next process reports the cut-off run to the model as unknown; killed while the model answers.
    const asked = ai.requests.length;
    await start('bot#2');
    await waitUntil(() => ai.requests.slice(asked).some((r) => r.messages.at(-1)?.role === 'tool'), 60_000, () => `the continuation did not reach the model:\n${bot!.output().slice(-3000)}`);
    await bot!.kill9();

    // 3. The third process: the person hears of the turn.
    answerAfterTool = 'answer';
    await start('bot#3');
    await waitUntil(() => texts(mention).some((t) => t === RESTART_INTERRUPTED || t === 'finished c1'), 30_000, () => `no answer and no restart notice: ${JSON.stringify(texts(mention))}\n${bot!.output().slice(-3000)}`);
    expect(web.hits('/slow')).toBe(1);
    expect(await bot!.stop()).toBe(0);
    // Told once, and not run on: the model's answer after an unknown outcome was cut off, not repeated.
    expect(texts(mention).filter((t) => t === RESTART_INTERRUPTED || t === 'finished c1')).toEqual([RESTART_INTERRUPTED]);
  });
});
