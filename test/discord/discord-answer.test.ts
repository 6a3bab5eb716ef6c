import { REST } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { systemClock } from '../../src/basics/clock.js';
import type { Conversation } from '../../src/basics/types.js';
import { createDiscordAnswer, DISCORD_EDIT_MS } from '../../adapters/discord/discord-answer.js';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';

let discord: FakeDiscord;
let rest: REST;

beforeEach(async () => {
  discord = await startFakeDiscord();
  rest = new REST({ api: discord.apiUrl, timeout: 5_000 }).setToken('fake-token');
});
afterEach(async () => {
  rest.clearHashSweeper();
  rest.clearHandlerSweeper();
  await discord.close();
});

describe('Discord answers shown while they are written', () => {
  it('replies once, edits at most every 1.5 s, and continues past 2,000 characters without losing text', async () => {
    const conversation: Conversation = { platform: 'discord', workspaceId: discord.guildId, channelId: discord.channelId, isDm: false };
    const userMessage = discord.sendGuildMessage({ author: { id: '100000000000000001', username: 'alice', discriminator: '0', global_name: null, avatar: null }, content: 'hi' });
    const answer = createDiscordAnswer({ rest, clock: systemClock, log: createLogger('silent') }, conversation, { replyTo: userMessage });
    answer.append('First words');
    const firstPost = await discord.waitForCall((c) => c.method === 'POST' && c.path.endsWith('/messages'), 5_000, 'the first post');
    expect(firstPost.body).toMatchObject({ content: 'First words', message_reference: { message_id: userMessage } });
    const sentence = 'More text that keeps coming while the model writes. ';
    for (let i = 0; i < 60; i++) {
      answer.append(sentence);
      await new Promise((r) => setTimeout(r, 40));
    }
    const full = `First words${sentence.repeat(60)}`.trim();
    // What the final render sends is not throttled; everything that reached the server before it is a live edit.
    const finishedAt = Date.now();
    await answer.finish(full);
    const posts = discord.postedIn(discord.channelId);
    expect(posts.length).toBe(2);
    const edits = discord.calls.filter((c) => c.method === 'PATCH');
    // Live edits at most every 1.5 s (counted: arrival times jitter on a loaded machine); the final edits are not held back.
    // How many edits the final render makes depends on how far the live ones got (one PATCH and a new post when the
    // answer first crosses 2,000 characters at the end), so live edits are told apart by time, not by position.
    const liveEdits = edits.filter((c) => c.at < finishedAt);
    const elapsed = edits.at(-1)!.at - firstPost.at;
    expect(liveEdits.length).toBeLessThanOrEqual(Math.ceil(elapsed / DISCORD_EDIT_MS) + 1);
    expect(liveEdits.length).toBeGreaterThan(0);
    const shown = posts.map((p) => discord.messages.get((p.response as { id: string }).id)!.content);
    for (const part of shown) expect(part.length).toBeLessThanOrEqual(2000);
    expect(shown.join('').replace(/\s+/g, ' ')).toBe(full.replace(/\s+/g, ' '));
    expect(posts[1]!.body).not.toHaveProperty('message_reference');
  });
});
