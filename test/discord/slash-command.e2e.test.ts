import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InteractionResponseType, MessageFlags, type APIMessage, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { HERMES_COMMAND } from '../../adapters/discord/register-commands.js';
import { DEFAULT_USER, type RestCall } from '../fakes/discord/fake-discord.js';
import { startBot, type Bot } from './discord-harness.js';

/** `/hermes` end to end, registered globally (no DISCORD_GUILD_ID). */

let bot: Bot;
beforeAll(async () => {
  bot = await startBot();
});
afterAll(async () => {
  await bot?.close();
});

type Body = RESTPostAPIChannelMessageJSONBody & { type?: number; data?: { flags?: number; content?: string } };
const body = (c: RestCall) => (c.body ?? {}) as Body;

async function deferral(interactionId: string): Promise<Body> {
  const call = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${interactionId}/`), 15_000, 'the deferral');
  return body(call);
}
const original = (token: string) =>
  bot.discord.waitForCall((c) => c.method === 'PATCH' && c.path === `/webhooks/${bot.discord.applicationId}/${token}/messages/@original`, 15_000, 'the edited reply');

describe('/hermes on discord', () => {
  it('registered /hermes globally at start', () => {
    const { commands } = bot.discord;
    expect(commands.global.map((c) => c.name)).toEqual(['hermes']);
    expect(commands.global[0]!.options).toEqual(HERMES_COMMAND.options);
  });

  it('help answers privately: ephemeral deferral, then the list in the edited reply', async () => {
    const { interactionId, token } = bot.discord.runSlashCommand({ user: DEFAULT_USER, text: 'help' });
    const d = await deferral(interactionId);
    expect(d.type).toBe(InteractionResponseType.DeferredChannelMessageWithSource);
    expect(d.data?.flags).toBe(MessageFlags.Ephemeral);
    const reply = await original(token);
    for (const sub of ['new', 'stop', 'memory', 'forget', 'status', 'help']) expect(body(reply).content).toContain(sub);
  });

  it('new answers privately and starts a fresh session', async () => {
    const { interactionId, token } = bot.discord.runSlashCommand({ user: DEFAULT_USER, text: 'new' });
    expect((await deferral(interactionId)).data?.flags).toBe(MessageFlags.Ephemeral);
    expect(body(await original(token)).content).toMatch(/fresh|new/i);
  });

  it('a task is in the inbox before Discord hears of it: echo in the channel, private acknowledgement, answer replying to the echo', async () => {
    const { discord, openai } = bot;
    // The answer comes late, so the task is still in the inbox (not yet done) whenever Discord is answered.
    openai.enqueue({ text: 'It is tea time.', delayMs: 1500 });
    const durableAtAck: Array<boolean> = [];
    let interactionId = '';
    discord.onCall(async (c) => {
      if (c.method === 'POST' && c.path.startsWith(`/interactions/${interactionId}/`)) {
        // The accepted task is a row in the work table (deleted only once its turn has ended).
        const row = await bot.core.database.db.selectFrom('hermes_work').select('id').where('id', '=', `msg:discord:cmd:${interactionId}`).executeTakeFirst();
        durableAtAck.push(row !== undefined);
      }
    });
    try {
      const started = discord.runSlashCommand({ user: DEFAULT_USER, text: 'what time is it?' });
      interactionId = started.interactionId;
      const ack = await discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${interactionId}/`), 15_000, 'the acknowledgement');
      expect(durableAtAck).toEqual([true]);
      expect(body(ack).type).toBe(InteractionResponseType.ChannelMessageWithSource);
      expect(body(ack).data).toMatchObject({ content: 'Working on it: what time is it?', flags: MessageFlags.Ephemeral });

      const echo = discord.calls.find((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && String(body(c).content).includes('asked: what time is it?'))!;
      expect(echo.at).toBeLessThanOrEqual(ack.at);
      const answer = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).content === 'It is tea time.');
      expect(body(answer).message_reference?.message_id).toBe((echo.response as APIMessage).id);
      const asked = openai.requests.at(-1)!.messages.filter((m) => m.role === 'user').at(-1);
      expect(JSON.stringify(asked)).toContain('what time is it?');
    } finally {
      discord.onCall(undefined);
    }
  });

  it('works in a DM too, and a private answer stays ephemeral', async () => {
    const { interactionId, token } = bot.discord.runSlashCommand({ user: DEFAULT_USER, text: 'status', dm: true });
    expect((await deferral(interactionId)).data?.flags).toBe(MessageFlags.Ephemeral);
    expect(body(await original(token)).content?.length).toBeGreaterThan(0);
  });

  it('a task started in a thread is answered in that thread', async () => {
    const { discord, openai } = bot;
    const threadId = '400000000000000077';
    openai.enqueue({ text: 'thread hello' }, { text: 'thread task done' });
    discord.sendThreadMessage({ author: DEFAULT_USER, content: 'open a thread', threadId, mentionBot: true });
    await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${threadId}/messages` && body(c).content === 'thread hello');
    discord.runSlashCommand({ user: DEFAULT_USER, text: 'summarise this thread', channelId: threadId });
    await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${threadId}/messages` && body(c).content === 'thread task done');
    // Same session as the thread: the model saw the earlier exchange.
    expect(JSON.stringify(openai.requests.at(-1)!.messages)).toContain('thread hello');
  });

  it('does not register again on restart when nothing changed', async () => {
    const puts = () => bot.discord.calls.filter((c) => c.method === 'PUT' && c.path.endsWith('/commands')).length;
    expect(puts()).toBe(1);
    await bot.restart();
    expect(puts()).toBe(1);
    expect(bot.discord.calls.filter((c) => c.method === 'GET' && c.path.endsWith('/commands')).length).toBe(2);
  });
});

describe('/hermes registration on a guild', () => {
  let guildBot: Bot;
  afterAll(async () => {
    await guildBot?.close();
  });

  it('registers on DISCORD_GUILD_ID and removes a stale global /hermes', async () => {
    const { startFakeDiscord } = await import('../fakes/discord/fake-discord.js');
    const discord = await startFakeDiscord();
    discord.commands.global = [{ ...HERMES_COMMAND, id: '1', application_id: discord.applicationId, version: '1', default_member_permissions: null, description: 'old', type: 1 } as never];
    guildBot = await startBot({ discord, env: { DISCORD_GUILD_ID: discord.guildId } });
    try {
      expect(discord.commands.guild.get(discord.guildId)?.map((c) => c.name)).toEqual(['hermes']);
      expect(discord.commands.global).toEqual([]);
    } finally {
      await guildBot.close();
      await discord.close();
    }
  });
});
