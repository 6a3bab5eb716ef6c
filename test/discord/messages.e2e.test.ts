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

const body = (c: { body: unknown }) => c.body as RESTPostAPIChannelMessageJSONBody;

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
});
