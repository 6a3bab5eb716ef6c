import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { SEEN_EMOJI } from '../../adapters/discord/outbound-port.js';
import { startBot, type Bot } from './discord-harness.js';

/**
 * A message that arrives while its channel's turn runs (HERMES_BUSY_MODE), through the real
 * discord.js client and core against the fakes. The first model call is held until the second
 * message is durably accepted.
 */
let bot: Bot | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await bot?.close();
  bot = undefined;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const OTHER = { ...DEFAULT_USER, id: '300000000000000002', username: 'bea', global_name: 'Bea' };
const CALL_TOOL = { toolCalls: [{ name: 'get_current_time', arguments: { timezone: 'UTC' } }] };
const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;
const userTexts = (req: ChatCompletionRequestBody | undefined): string[] =>
  (req?.messages ?? []).filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

function held(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((r) => (release = r));
  return { wait, release };
}

async function accepted(b: Bot, messageId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await b.core.database.db.selectFrom('hermes_work').select('id').where('id', '=', `msg:discord:${messageId}`).executeTakeFirst())) {
    if (Date.now() > deadline) throw new Error(`message ${messageId} was never accepted`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const answers = (b: Bot) => b.discord.calls.filter((c) => c.method === 'POST' && c.path === `/channels/${b.discord.channelId}/messages`).map((c) => body(c).content);
const reactions = (b: Bot) => b.discord.calls.filter((c) => c.method === 'PUT' && c.path.includes('/reactions/'));

async function busyChannel(b: Bot): Promise<string> {
  b.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'look up the time and tell me', mentionBot: true });
  await waitUntil(() => b.openai.requests.length === 1);
  const second = b.discord.sendGuildMessage({ author: OTHER, content: 'and say it in French please', mentionBot: true });
  await accepted(b, second);
  return second;
}

async function waitUntil(check: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('discord: a message while the channel\'s turn runs', () => {
  it('steer (default): taken into the running turn before its next model call, marked 👀, answered once', async () => {
    bot = await startBot({ tools: [getCurrentTime] });
    const first = held();
    bot.openai.setHandler(async (_req, i) => (i === 0 ? (await first.wait, CALL_TOOL) : { text: 'Il est midi.' }));
    const second = await busyChannel(bot);
    first.release();
    await waitUntil(() => answers(bot!).length === 1);
    await bot.core.gateway.idle();
    expect(bot.openai.requests).toHaveLength(2);
    expect(userTexts(bot.openai.requests[1]).at(-1)).toMatch(/\(id 300000000000000002\)\] and say it in French please$/);
    expect(answers(bot)).toEqual(['Il est midi.']);
    expect(reactions(bot).map((c) => c.path)).toEqual([`/channels/${bot.discord.channelId}/messages/${second}/reactions/${SEEN_EMOJI}/@me`]);
  });

  it('queue: the message waits for its own turn', async () => {
    bot = await startBot({ tools: [getCurrentTime], env: { HERMES_BUSY_MODE: 'queue' } });
    const first = held();
    bot.openai.setHandler(async (_req, i) => (i === 0 ? (await first.wait, CALL_TOOL) : i === 1 ? { text: 'It is noon.' } : { text: 'Il est midi.' }));
    await busyChannel(bot);
    first.release();
    await waitUntil(() => answers(bot!).length === 2);
    await bot.core.gateway.idle();
    expect(bot.openai.requests).toHaveLength(3);
    expect(userTexts(bot.openai.requests[1]).some((t) => t.includes('French'))).toBe(false);
    expect(answers(bot)).toEqual(['It is noon.', 'Il est midi.']);
    expect(reactions(bot)).toEqual([]);
  });

  it('interrupt: the running turn is stopped and the new message answered', async () => {
    bot = await startBot({ tools: [getCurrentTime], env: { HERMES_BUSY_MODE: 'interrupt' } });
    bot.openai.enqueue({ hang: true }, { text: 'Il est midi.' });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'look up the time and tell me', mentionBot: true });
    await waitUntil(() => bot!.openai.requests.length === 1);
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'no wait, say it in French', mentionBot: true });
    await waitUntil(() => answers(bot!).length === 1);
    await bot.core.gateway.idle();
    expect(bot.openai.abandoned).toBe(1);
    expect(userTexts(bot.openai.requests[1]).at(-1)).toMatch(/no wait, say it in French$/);
    expect(answers(bot)).toEqual(['Il est midi.']);
  });

  it('a channel policy\'s busy_mode applies in its channel over HERMES_BUSY_MODE', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-busy-'));
    dirs.push(dir);
    const file = path.join(dir, 'hermes.config.yaml');
    // The fake's one guild text channel.
    await writeFile(file, ['channels:', '  discord:channel:300000000000000003:', '    busy_mode: queue'].join('\n'));
    bot = await startBot({ tools: [getCurrentTime], env: { HERMES_CONFIG: file, HERMES_BUSY_MODE: 'steer' } });
    expect(bot.discord.channelId).toBe('300000000000000003');
    const first = held();
    bot.openai.setHandler(async (_req, i) => (i === 0 ? (await first.wait, CALL_TOOL) : i === 1 ? { text: 'It is noon.' } : { text: 'Il est midi.' }));
    await busyChannel(bot);
    first.release();
    await waitUntil(() => answers(bot!).length === 2);
    await bot.core.gateway.idle();
    expect(bot.openai.requests).toHaveLength(3);
    expect(answers(bot)).toEqual(['It is noon.', 'Il est midi.']);
    expect(reactions(bot)).toEqual([]);
  });
});
