import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageFlags, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import { user } from '../fakes/discord/payloads.js';
import { startBot, type Bot } from './discord-harness.js';

/** Inbound and outbound messages through the real discord.js client, the real core and fake servers. */

let bot: Bot;
beforeAll(async () => {
  bot = await startBot();
});
afterAll(async () => {
  await bot?.close();
});

const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;

describe('discord messages', () => {
  it('answers a mention in a channel, as a reply, with no pings and no embeds', async () => {
    const { discord, openai } = bot;
    openai.enqueue({ text: 'Hello from **Hermes**' });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'hi there', mentionBot: true });
    const call = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).content === 'Hello from **Hermes**');
    expect(body(call).message_reference).toEqual({ message_id: id, fail_if_not_exists: false });
    expect(body(call).allowed_mentions).toEqual({ parse: [], users: [], roles: [], replied_user: true });
    expect(body(call).flags).toBe(MessageFlags.SuppressEmbeds);
    // The model saw the text without the bot's mention.
    const lastUser = openai.requests.at(-1)!.messages.filter((m) => m.role === 'user').at(-1)!;
    expect(JSON.stringify(lastUser.content)).toContain('hi there');
    expect(JSON.stringify(lastUser.content)).not.toContain(discord.botUser.id);
  });

  it('answers a DM without a mention, in the DM channel', async () => {
    const { discord, openai } = bot;
    const bob = user('100000000000000011', 'bob');
    openai.enqueue({ text: 'dm answer' });
    const { messageId, channelId } = discord.sendDm({ author: bob, content: 'hello in private' });
    const call = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && body(c).content === 'dm answer');
    expect(body(call).message_reference?.message_id).toBe(messageId);
  });

  it('ignores a channel message that only spells the mention in text, and messages from bots', async () => {
    const { discord } = bot;
    const spelled = discord.sendGuildMessage({ author: DEFAULT_USER, content: `<@${discord.botUser.id}> not a real mention` });
    const fromBot = discord.sendGuildMessage({ author: user('100000000000000099', 'otherbot', true), content: 'beep', mentionBot: true });
    await bot.waitForLog((l) => l.messageId === spelled && l.verdict === 'ignored');
    await bot.waitForLog((l) => l.messageId === fromBot && typeof l.msg === 'string' && l.msg.includes('not for the bot'));
    const replies = discord.calls.filter((c) => c.method === 'POST' && (body(c).message_reference?.message_id === spelled || body(c).message_reference?.message_id === fromBot));
    expect(replies).toEqual([]);
  });

  it('keeps answering in a thread it joined, without a mention, and posts into the thread', async () => {
    const { discord, openai } = bot;
    const threadId = '400000000000000041';
    openai.enqueue({ text: 'first in thread' }, { text: 'second in thread' });
    discord.sendThreadMessage({ author: DEFAULT_USER, content: 'start here', threadId, mentionBot: true });
    await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${threadId}/messages` && body(c).content === 'first in thread');
    const followUp = discord.sendThreadMessage({ author: DEFAULT_USER, content: 'and a follow-up', threadId });
    const call = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${threadId}/messages` && body(c).content === 'second in thread');
    expect(body(call).message_reference?.message_id).toBe(followUp);
    // Both turns shared the thread's session: the second request carries the first exchange.
    expect(JSON.stringify(openai.requests.at(-1)!.messages)).toContain('first in thread');
  });

  it('does not answer in a thread it never joined unless mentioned', async () => {
    const { discord, openai } = bot;
    const threadId = '400000000000000042';
    const modelCalls = openai.requests.length;
    const id = discord.sendThreadMessage({ author: DEFAULT_USER, content: 'chatting among humans', threadId });
    await bot.waitForLog((l) => l.messageId === id && l.verdict === 'ignored');
    await bot.core.gateway.idle();
    expect(openai.requests.length).toBe(modelCalls);
    expect(discord.postedIn(threadId)).toEqual([]);
    expect(discord.calls.filter((c) => c.path === `/channels/${threadId}/typing`)).toEqual([]);
    // The same thread with a mention is answered: the silence above was the rule, not a broken bot.
    openai.enqueue({ text: 'now I am here' });
    discord.sendThreadMessage({ author: DEFAULT_USER, content: 'over to you', threadId, mentionBot: true });
    await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${threadId}/messages` && body(c).content === 'now I am here');
  });

  it('sends a 10,000-character answer whole and in order, every message within 2,000, only the first a reply', async () => {
    const { discord, openai } = bot;
    // Labelled with small numbers only: a reply full of 3-digit numbers no tool gave would get the grounding check's extra step.
    const lines = Array.from({ length: 250 }, (_, i) => `Part ${String(Math.floor(i / 10)).padStart(2, '0')} line ${i % 10}: ${'lorem ipsum '.repeat(3).trim()}`);
    const long = lines.join('\n');
    expect(long.length).toBeGreaterThanOrEqual(10_000);
    openai.enqueue({ text: long });
    const channelId = '300000000000000004';
    const before = discord.postedIn(channelId).length;
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'write a lot', mentionBot: true, channelId });
    await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && (body(c).content ?? '').includes('Part 24 line 9'), 10_000);
    const posted = discord.postedIn(channelId).slice(before).map(body);
    expect(posted.length).toBeGreaterThanOrEqual(6);
    for (const p of posted) expect(p.content!.length).toBeLessThanOrEqual(2000);
    expect(posted.map((p) => p.content).join('')).toBe(long);
    expect(posted[0]!.message_reference?.message_id).toBe(id);
    expect(posted.slice(1).every((p) => p.message_reference === undefined)).toBe(true);
  });

  it('never lets @everyone, @here or a role ping, and keeps the text as written', async () => {
    const { discord, openai } = bot;
    const text = 'Heads up @everyone and @here, also <@&555> and <@100000000000000011>';
    openai.enqueue({ text });
    discord.sendGuildMessage({ author: DEFAULT_USER, content: 'announce it', mentionBot: true });
    const call = await discord.waitForCall((c) => c.method === 'POST' && body(c).content === text);
    expect(body(call).allowed_mentions).toMatchObject({ parse: [], users: [], roles: [] });
  });

  it('shows typing while a turn runs and stops afterwards', async () => {
    const { discord, openai } = bot;
    const channelId = '300000000000000004';
    const typing = () => discord.calls.filter((c) => c.path === `/channels/${channelId}/typing`).length;
    const before = typing();
    openai.enqueue({ text: 'slow answer', delayMs: 700 });
    discord.sendGuildMessage({ author: DEFAULT_USER, content: 'take your time', mentionBot: true, channelId });
    await discord.waitForCall((c) => c.method === 'POST' && body(c).content === 'slow answer');
    expect(typing() - before).toBeGreaterThanOrEqual(2);
    await bot.core.gateway.idle();
    expect(bot.adapter.port.activeTyping()).toBe(0);
    const after = typing();
    await new Promise((r) => setTimeout(r, 500));
    expect(typing()).toBe(after);
  });

  it('turns a model outage into a clear message in the channel', async () => {
    const { discord, openai } = bot;
    openai.enqueue({ status: 500, body: { error: { message: 'upstream down', type: 'server_error' } } });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'are you there?', mentionBot: true });
    const call = await discord.waitForCall((c) => c.method === 'POST' && body(c).message_reference?.message_id === id);
    expect(body(call).content).toMatch(/language model/i);
  });

  it('drops a MESSAGE_CREATE that Discord replays after a resume', async () => {
    const { discord, openai } = bot;
    openai.enqueue({ text: 'answered once' });
    const seqBefore = discord.gateway.sequence;
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'only once please', mentionBot: true });
    await discord.waitForCall((c) => c.method === 'POST' && body(c).content === 'answered once');
    await bot.core.gateway.idle();
    const requests = openai.requests.length;
    const resumes = discord.gateway.resumes.length;
    discord.gateway.replayFrom = seqBefore;
    discord.gateway.drop(4000);
    await bot.waitForLog((l) => l.messageId === id && l.verdict === 'duplicate', 15_000);
    expect(discord.gateway.resumes.length).toBe(resumes + 1);
    await bot.core.gateway.idle();
    expect(openai.requests.length).toBe(requests);
    expect(discord.calls.filter((c) => c.method === 'POST' && body(c).message_reference?.message_id === id)).toHaveLength(1);
  });
});
