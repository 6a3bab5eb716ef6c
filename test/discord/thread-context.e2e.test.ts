import { afterEach, describe, expect, it } from 'vitest';
import { GatewayDispatchEvents, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { user } from '../fakes/discord/payloads.js';
import { readChannelHistoryTool } from '../../tools/read-channel-history.js';
import { startBot, type Bot } from './discord-harness.js';

/**
 * What the bot sees of the conversation on Discord, end to end: the real discord.js client against
 * the fake Discord (message history, message fetch, guild members), the real core and the scripted
 * model over the real openai SDK.
 */

let bot: Bot | undefined;
afterEach(async () => {
  await bot?.close();
  bot = undefined;
});

const alice = user('100000000000000001', 'alice');
const bob = user('100000000000000002', 'bob');
const carol = user('100000000000000003', 'carol');
const ci = user('100000000000000099', 'ci-bot', true);

type Msg = { role: string; content?: unknown };
const userMessages = (req: { messages: unknown[] }) => (req.messages as Msg[]).filter((m) => m.role === 'user').map((m) => String(m.content));
const BLOCK = /<<<OUTSIDE_DATA id=([0-9a-f]{16}) source="thread context">>>\n([\s\S]*?)\n<<<END_OUTSIDE_DATA id=\1>>>/;
const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;
const answerIn = (b: Bot, channelId: string, content: string) =>
  b.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && body(c).content === content, 15_000, `"${content}"`);

describe('thread context on Discord', () => {
  it('the first request carries the thread\'s earlier messages with nicknames, bots labelled, files described, inside one untrusted block', async () => {
    bot = await startBot();
    const { discord, openai } = bot;
    const threadId = '400000000000000071';
    discord.openThread(threadId, alice);
    discord.setNick(bob.id, 'Bobby');
    discord.seedMessage({ channelId: threadId, author: alice, content: 'Which database for the new service?' });
    discord.seedMessage({ channelId: threadId, author: bob, content: 'Postgres, we know it.' });
    discord.seedMessage({ channelId: threadId, author: ci, content: 'schema check passed' });
    discord.seedMessage({ channelId: threadId, author: alice, extra: { attachments: [{ id: '1', filename: 'erd.png', content_type: 'image/png', size: 10, url: 'http://x', proxy_url: 'http://x' }] } });
    openai.enqueue({ text: 'They chose Postgres.' });
    discord.sendThreadMessage({ author: carol, content: 'summarise this thread', threadId, mentionBot: true });
    await answerIn(bot, threadId, 'They chose Postgres.');

    const users = userMessages(openai.requests[0]!);
    expect(users).toHaveLength(2);
    expect(users[1]).toContain('summarise this thread');
    const lines = BLOCK.exec(users[0]!)![2]!.split('\n').slice(1);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\dZ\] alice: Which database for the new service\?$/);
    expect(lines[1]).toContain('Bobby: Postgres, we know it.');
    expect(lines[2]).toContain('ci-bot (bot): schema check passed');
    expect(lines[3]).toContain('alice: [file: erd.png (image/png)]');
  });

  it('a reply reads the message it answers (and its chain)', async () => {
    bot = await startBot();
    const { discord, openai } = bot;
    const question = discord.seedMessage({ channelId: discord.channelId, author: bob, content: 'Can someone review PR 12?' });
    const nudge = discord.seedMessage({ channelId: discord.channelId, author: carol, content: 'bump', replyTo: question });
    openai.enqueue({ text: 'I will look at PR 12.' });
    discord.sendGuildMessage({ author: alice, content: 'can you answer this?', mentionBot: true, replyTo: nudge });
    await answerIn(bot, discord.channelId, 'I will look at PR 12.');
    const lines = BLOCK.exec(userMessages(openai.requests[0]!)[0]!)![2]!.split('\n').slice(1);
    expect(lines.map((l) => l.replace(/^\[[^\]]+\] /, ''))).toEqual(['bob: Can someone review PR 12?', 'carol: bump']);
  });

  it('without Read Message History it says so in one line and still answers', async () => {
    bot = await startBot();
    const { discord, openai } = bot;
    const threadId = '400000000000000072';
    discord.openThread(threadId, alice);
    discord.seedMessage({ channelId: threadId, author: alice, content: 'earlier' });
    discord.denyHistory(threadId);
    openai.enqueue({ text: 'answered anyway' });
    discord.sendThreadMessage({ author: carol, content: 'what was said?', threadId, mentionBot: true });
    await answerIn(bot, threadId, 'answered anyway');
    const texts = discord.postedIn(threadId).map((c) => body(c).content);
    expect(texts[0]).toBe("I can't read this thread: the app lacks Read Message History — give the bot the View Channel and Read Message History permissions in this channel (Server Settings → Roles, or the channel's permissions).");
  });

  it('in a joined thread, talk between people is not answered but is seen at the next turn', async () => {
    bot = await startBot();
    const { discord, openai } = bot;
    const threadId = '400000000000000073';
    openai.enqueue({ text: 'hello' }, { text: 'Bob asked Alice for the budget.' });
    discord.sendThreadMessage({ author: alice, content: 'hi', threadId, mentionBot: true });
    await answerIn(bot, threadId, 'hello');
    const aside = discord.sendThreadMessage({ author: bob, content: `<@${alice.id}> did you send the budget?`, threadId, mentions: [alice] });
    await bot.waitForLog((l) => l.messageId === aside && l.verdict === 'noted');
    discord.sendThreadMessage({ author: alice, content: 'what did Bob ask me?', threadId });
    await answerIn(bot, threadId, 'Bob asked Alice for the budget.');
    expect(openai.requests).toHaveLength(2);
    const since = userMessages(openai.requests[1]!).find((u) => u.includes('since your last answer'))!;
    expect(BLOCK.exec(since)![2]).toContain('bob: @alice (<@100000000000000001>) did you send the budget?');
  });
});

describe('noted thread messages on Discord', () => {
  it('an edit keeps the latest text and a deletion drops the message before the next turn', async () => {
    bot = await startBot();
    const { discord, openai } = bot;
    const threadId = '400000000000000074';
    openai.enqueue({ text: 'hello' }, { text: 'ok' });
    discord.sendThreadMessage({ author: alice, content: 'hi', threadId, mentionBot: true });
    await answerIn(bot, threadId, 'hello');
    const edited = discord.sendThreadMessage({ author: bob, content: `<@${alice.id}> budget is 10k`, threadId, mentions: [alice] });
    const deleted = discord.sendThreadMessage({ author: bob, content: `<@${alice.id}> ignore me`, threadId, mentions: [alice] });
    await bot.waitForLog((l) => l.messageId === deleted && l.verdict === 'noted');
    discord.gateway.dispatch(GatewayDispatchEvents.MessageUpdate, { id: edited, channel_id: threadId, guild_id: discord.guildId, content: 'budget is 12k', author: bob, edited_timestamp: new Date().toISOString() });
    discord.gateway.dispatch(GatewayDispatchEvents.MessageDelete, { id: deleted, channel_id: threadId, guild_id: discord.guildId });
    // Both revisions are gateway events handled in order before this next message.
    discord.sendThreadMessage({ author: alice, content: 'what is the budget?', threadId });
    await answerIn(bot, threadId, 'ok');
    const since = userMessages(openai.requests[1]!).find((u) => u.includes('since your last answer'))!;
    const lines = BLOCK.exec(since)![2]!.split('\n').slice(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('bob (edited): budget is 12k');
  });
});

describe('read_channel_history on Discord', () => {
  it('reads only the channel the request came from', async () => {
    bot = await startBot({ tools: [readChannelHistoryTool] });
    const { discord, openai } = bot;
    discord.seedMessage({ channelId: discord.channelId, author: bob, content: 'release is at 5pm' });
    discord.seedMessage({ channelId: '300000000000000004', author: bob, content: 'SECRET in #random' });
    openai.enqueue({ toolCalls: [{ id: 'h1', name: 'read_channel_history', arguments: { limit: 20 } }] }, { text: 'Release at 5pm.' });
    discord.sendGuildMessage({ author: alice, content: 'what happened here today?', mentionBot: true });
    await answerIn(bot, discord.channelId, 'Release at 5pm.');
    const tool = (openai.requests[1]!.messages as Array<{ role: string; content: string }>).find((m) => m.role === 'tool')!.content;
    expect(tool).toMatch(/^<<<OUTSIDE_DATA id=[0-9a-f]{16} source="channel history">>>/);
    expect(tool).toContain('bob: release is at 5pm');
    expect(tool).not.toContain('SECRET');
    const reads = discord.calls.filter((c) => c.method === 'GET' && /^\/channels\/\d+\/messages/.test(c.path));
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((c) => c.path.startsWith(`/channels/${discord.channelId}/`))).toBe(true);
  });
});
