import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { APIMessage, RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { DISCORD_EDIT_MS } from '../../adapters/discord/discord-answer.js';
import { DISCORD_MESSAGE_LIMIT } from '../../adapters/discord/chunk.js';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import type { RestCall } from '../fakes/discord/fake-rest.js';
import { startBot, type Bot } from './discord-harness.js';

/** Answers shown as they are written, through the real discord.js client and core against the fakes. */
let bot: Bot;
beforeAll(async () => {
  // Grounding off: the scripted answers name figures ("word699") no tool gave, which would ask the model again.
  bot = await startBot({ env: { HERMES_STREAMING: 'on', HERMES_GROUNDING: 'off' }, tools: [getCurrentTime] });
});
afterAll(async () => {
  await bot?.close();
});

const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;

/** Every message call of the bot in the test channel since `from` (posts and edits). */
function messageCalls(from: number): RestCall[] {
  const { discord } = bot;
  return discord.calls.slice(from).filter((c) => (c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages`) || (c.method === 'PATCH' && c.path.startsWith(`/channels/${discord.channelId}/messages/`)));
}

describe('discord: streamed answers', () => {
  it('replies with the first words, then edits the same reply to the whole answer', async () => {
    const { discord, openai } = bot;
    openai.enqueue({ text: 'The first words, and then the rest of the answer.', stream: { textChunks: ['The first words,', ' and then the rest', ' of the answer.'], chunkDelayMs: 200 } });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'tell me', mentionBot: true });
    const post = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).message_reference?.message_id === id);
    expect(body(post).content).toBe('The first words,');
    const replyId = (post.response as APIMessage).id;
    await discord.waitForCall((c) => c.method === 'PATCH' && c.path.endsWith(`/messages/${replyId}`) && body(c).content === 'The first words, and then the rest of the answer.');
    const posts = discord.calls.filter((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).message_reference?.message_id === id);
    expect(posts).toHaveLength(1);
    expect(discord.messages.get(replyId)?.content).toBe('The first words, and then the rest of the answer.');
  });

  it('edits the reply at most every 1.5 s while it is written, and never shows tool-call text', async () => {
    const { discord, openai } = bot;
    await bot.core.gateway.idle();
    const from = discord.calls.length;
    const call = '<tool_call>{"name": "get_current_time", "arguments": {"timezone": "UTC"}}</tool_call>';
    // 24 pieces 150 ms apart: the answer is written over about 3.5 s.
    const words = Array.from({ length: 24 }, (_, i) => `part${i} `);
    openai.enqueue(
      { text: `Let me check the clock.\n${call}`, stream: { textChunks: ['Let me check ', 'the clock.\n<tool', `_call>${call.slice(11, 50)}`, call.slice(50)], chunkDelayMs: 50 } },
      { text: words.join('').trimEnd(), stream: { textChunks: [...words.slice(0, -1), words.at(-1)!.trimEnd()], chunkDelayMs: 150 } },
    );
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'what time is it, at length', mentionBot: true });
    const post = await discord.waitForCall((c) => c.method === 'POST' && body(c).message_reference?.message_id === id);
    const replyId = (post.response as APIMessage).id;
    const final = await discord.waitForCall((c) => c.method === 'PATCH' && c.path.endsWith(`/messages/${replyId}`) && String(body(c).content).includes('part23'), 20_000);
    await bot.core.gateway.idle();

    const shown = messageCalls(from).filter((c) => c === post || c.path.endsWith(`/messages/${replyId}`));
    // Tool-call markup never reached the channel, in any edit.
    for (const c of shown) expect(String(body(c).content)).not.toMatch(/tool_call|"arguments"|"timezone"/);
    expect(discord.messages.get(replyId)?.content).toBe(`Let me check the clock.\n\n${words.join('').trimEnd()}`);
    // One reply, edited: no second message for a short answer.
    expect(messageCalls(from).filter((c) => c.method === 'POST')).toHaveLength(1);
    // Edits while written (everything before the final one) keep DISCORD_EDIT_MS apart, start to
    // start; counted over the whole span, since arrival times jitter by a few ms on a loaded machine.
    const live = shown.filter((c) => c.method === 'PATCH' && c.at < final.at);
    const span = final.at - post.at;
    expect(live.length).toBeGreaterThan(0);
    expect(live.length).toBeLessThanOrEqual(Math.floor(span / DISCORD_EDIT_MS) + 1);
    expect(span).toBeGreaterThan(2_000);
  });

  it('a long answer goes on in further messages within 2,000 characters each, without losing a word', async () => {
    const { discord, openai } = bot;
    await bot.core.gateway.idle();
    const from = discord.calls.length;
    // About 6,000 characters in 12 pieces: three or four Discord messages.
    const words = Array.from({ length: 700 }, (_, i) => `word${i}`);
    const text = words.map((w, i) => (i % 50 === 49 ? `${w}\n\n` : `${w} `)).join('').trimEnd();
    const per = Math.ceil(text.length / 12);
    const textChunks = Array.from({ length: 12 }, (_, i) => text.slice(i * per, (i + 1) * per)).filter((c) => c !== '');
    openai.enqueue({ text, stream: { textChunks, chunkDelayMs: 120 } });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'write a long one', mentionBot: true });
    await discord.waitForCall((c) => c.method === 'POST' && body(c).message_reference?.message_id === id);
    await discord.waitForCall((c) => (c.method === 'POST' || c.method === 'PATCH') && String(body(c).content).includes('word699'), 20_000);
    await bot.core.gateway.idle();

    const calls = messageCalls(from);
    // Discord refuses content over 2,000 characters: nothing was refused, nothing was over.
    for (const c of calls) expect(String(body(c).content ?? '').length).toBeLessThanOrEqual(DISCORD_MESSAGE_LIMIT);
    expect(discord.calls.slice(from).filter((c) => (c.response as { code?: number } | undefined)?.code === 50035)).toEqual([]);
    const postedIds = calls.filter((c) => c.method === 'POST').map((c) => (c.response as APIMessage).id);
    const kept = postedIds.map((m) => discord.messages.get(m)).filter((m): m is APIMessage => m !== undefined);
    expect(kept.length).toBeGreaterThanOrEqual(3);
    expect(kept.map((m) => m.content).join(' ').split(/\s+/)).toEqual(words);
  });
});
