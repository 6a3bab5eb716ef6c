import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { APIMessage, RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import { startBot, type Bot } from './discord-harness.js';

/** Answers shown as they are written, through the real discord.js client and core against the fakes. */
let bot: Bot;
beforeAll(async () => {
  bot = await startBot({ env: { HERMES_STREAMING: 'on' } });
});
afterAll(async () => {
  await bot?.close();
});

const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;

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
});
