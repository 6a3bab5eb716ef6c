import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComponentType, MessageFlags, type APIMessage, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { NOT_ALLOWED } from '../../src/gateway/user-messages.js';
import { readTraceStats } from '../../src/operations/stats/trace-stats.js';
import { speakerKey } from '../../src/basics/types.js';
import { settle } from '../reminders/manual-clock.js';
import { DEFAULT_USER, MEMBER_ROLE, type RestCall } from '../fakes/discord/fake-discord.js';
import { user } from '../fakes/discord/payloads.js';
import { startBot, type Bot } from './discord-harness.js';

/**
 * HERMES_ALLOW on Discord end to end: the real discord.js client against the fake Discord; the
 * member's roles come from the verified gateway events, as in production.
 */

const admin = user('100000000000000077', 'admin');
const bob = user('100000000000000011', 'bob');
const carol = user('100000000000000012', 'carol');
const channelId = '300000000000000003';

let bot: Bot;
beforeAll(async () => {
  bot = await startBot({ env: { HERMES_ALLOW: `discord:role:${MEMBER_ROLE.id}`, HERMES_ADMINS: `discord:${admin.id}` } });
  // Roles come with the member, which discord.js only builds once the guild is cached (GUILD_CREATE).
  for (let i = 0; i < 200 && !bot.adapter.client?.guilds.cache.has(bot.discord.guildId); i++) await new Promise((r) => setTimeout(r, 25));
});
afterAll(async () => {
  await bot?.close();
});

const body = (c: RestCall) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody & { data?: { flags?: number } };
const replyTo = (messageId: string) => (c: RestCall) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && body(c).message_reference?.message_id === messageId;

describe('HERMES_ALLOW on discord', () => {
  it('answers a member with a listed role', async () => {
    bot.openai.enqueue({ text: 'hello member' });
    const id = bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'hi', mentionBot: true, roles: [MEMBER_ROLE.id] });
    expect(body(await bot.discord.waitForCall(replyTo(id))).content).toBe('hello member');
  });

  it('sends anyone else one private notice (a DM) an hour, and never calls the model for them', async () => {
    const before = bot.openai.requests.length;
    bot.discord.sendGuildMessage({ author: bob, content: 'hi', mentionBot: true });
    const opened = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === '/users/@me/channels' && (c.body as { recipient_id?: string }).recipient_id === bob.id);
    const dmId = (opened.response as { id: string }).id;
    const notice = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${dmId}/messages`);
    expect(body(notice).content).toBe(NOT_ALLOWED);

    bot.discord.sendGuildMessage({ author: bob, content: 'hello??', mentionBot: true });
    await bot.waitForLog((l) => l.msg === 'request refused' && l.reason === 'not_allowed' && bot.logs.filter((x) => x.msg === 'request refused').length >= 2);
    expect(bot.discord.postedIn(dmId)).toHaveLength(1);
    expect(bot.discord.postedIn(channelId).filter((c) => JSON.stringify(c.body).includes('hello??'))).toHaveLength(0);
    expect(bot.openai.requests.length).toBe(before);
    // Traced by reason, as npm run stats counts them.
    const key = speakerKey({ platform: 'discord', workspaceId: bot.discord.guildId, userId: bob.id });
    await settle(async () => (await readTraceStats(`${bot.config.dataDir}/traces`, { since: 0, until: Date.now() + 1000, userKey: key })).refusals.not_allowed === 2, 15_000);
  });

  it('always answers an admin, whatever their roles', async () => {
    bot.openai.enqueue({ text: 'yes, admin' });
    const id = bot.discord.sendGuildMessage({ author: admin, content: 'status?', mentionBot: true });
    expect(body(await bot.discord.waitForCall(replyTo(id))).content).toBe('yes, admin');
  });

  it('remembers a member\'s roles for their DMs (a DM event carries none)', async () => {
    bot.openai.enqueue({ text: 'seen you' });
    const id = bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'hi first', mentionBot: true, roles: [MEMBER_ROLE.id] });
    await bot.discord.waitForCall(replyTo(id));
    bot.openai.enqueue({ text: 'hello in dm' });
    const { channelId: dm } = bot.discord.sendDm({ author: DEFAULT_USER, content: 'psst' });
    expect(body(await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${dm}/messages`)).content).toBe('hello in dm');
  });

  it('/hermes answers the same notice privately; a refused task\'s public echo is removed', async () => {
    const before = bot.openai.requests.length;
    const help = bot.discord.runSlashCommand({ user: carol, text: 'help' });
    const edited = await bot.discord.waitForCall((c) => c.method === 'PATCH' && c.path === `/webhooks/${bot.discord.applicationId}/${help.token}/messages/@original`);
    expect(body(edited).content).toBe(NOT_ALLOWED);

    const task = bot.discord.runSlashCommand({ user: carol, text: 'write me a poem' });
    const echo = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && String(body(c).content).includes('asked: write me a poem'), 15_000, 'the echo');
    await bot.discord.waitForCall((c) => c.method === 'DELETE' && c.path === `/channels/${channelId}/messages/${(echo.response as APIMessage).id}`, 15_000, 'the echo removed');
    const answer = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${task.interactionId}/`));
    expect((body(answer) as { data?: unknown }).data).toMatchObject({ content: NOT_ALLOWED, flags: MessageFlags.Ephemeral });
    expect(bot.openai.requests.length).toBe(before);
  });

  it('a click from someone not allowed is refused, even on their own request; the action does not run', async () => {
    bot.openai.enqueue({ toolCalls: [{ name: 'risky_action', arguments: { target: 'prod' } }] });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'do it', mentionBot: true, roles: [MEMBER_ROLE.id] });
    const call = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && JSON.stringify(body(c).components ?? []).includes('hermes:approve:'), 15_000, 'the approval prompt');
    const prompt = call.response as APIMessage;
    const row = prompt.components![0]!;
    if (row.type !== ComponentType.ActionRow) throw new Error('no buttons');
    const approve = (row.components[0] as { custom_id: string }).custom_id;

    // The requester lost the role since asking: the click carries their roles as they are now.
    const click = bot.discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: approve, roles: [] });
    const answer = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/webhooks/${bot.discord.applicationId}/tok-${click}`));
    expect(body(answer)).toMatchObject({ content: NOT_ALLOWED, flags: MessageFlags.Ephemeral });
    expect(bot.riskyRuns).toEqual([]);

    bot.openai.enqueue({ text: 'done' });
    bot.discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: approve, roles: [MEMBER_ROLE.id] });
    await bot.discord.waitForCall((c) => c.method === 'POST' && body(c).content === 'done', 15_000, 'the answer after approval');
    expect(bot.riskyRuns).toEqual([{ target: 'prod' }]);
  });
});
