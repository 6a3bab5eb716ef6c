import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageFlags, type APIActionRowComponent, type APIButtonComponentWithCustomId, type APIComponentInMessageActionRow, type APIMessage, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { createFeedbackStore } from '../../src/state/feedback/feedback-store.js';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import { user } from '../fakes/discord/payloads.js';
import { waitFor } from '../helpers/wait-for.js';
import { startBot, type Bot } from './discord-harness.js';

/** Stop and feedback buttons on answers, through the real discord.js client and core against the fakes. */
let bot: Bot;
beforeAll(async () => {
  bot = await startBot({ env: { HERMES_STREAMING: 'on' } });
});
afterAll(async () => {
  await bot?.close();
});

const STOP_WITHIN_MS = 2_000;
const bob = user('100000000000000077', 'bob');
const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;
const buttons = (b: RESTPostAPIChannelMessageJSONBody) =>
  ((b.components ?? []) as Array<APIActionRowComponent<APIComponentInMessageActionRow>>).flatMap((r) => r.components) as APIButtonComponentWithCustomId[];

function slowReply() {
  const words = Array.from({ length: 40 }, (_, i) => `word${i} `);
  return { text: words.join(''), stream: { textChunks: words, chunkDelayMs: 250 } };
}

describe('discord: Stop and feedback buttons', () => {
  it('the reply being written carries Stop; someone else is refused privately; the requester stops it within 2 s', async () => {
    const { discord, openai } = bot;
    const abandonedBefore = openai.abandoned;
    openai.enqueue(slowReply());
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'write a lot', mentionBot: true });
    const post = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).message_reference?.message_id === id);
    const reply = post.response as APIMessage;
    const stop = buttons(body(post)).find((b) => b.label === 'Stop');
    expect(stop?.custom_id).toMatch(/^hermes:stop:/);
    expect(stop!.custom_id.length).toBeLessThanOrEqual(100);

    const bobClick = discord.clickButton({ user: bob, message: reply, customId: stop!.custom_id });
    const refusal = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/webhooks/${discord.applicationId}/tok-${bobClick}`);
    expect(body(refusal).flags! & MessageFlags.Ephemeral).toBe(MessageFlags.Ephemeral);
    expect(body(refusal).content).toBe(`Only <@${DEFAULT_USER.id}> (who asked) or an admin can stop this task.`);

    const clicked = Date.now();
    discord.clickButton({ user: DEFAULT_USER, message: reply, customId: stop!.custom_id });
    const ended = await discord.waitForCall((c) => c.method === 'PATCH' && c.path.endsWith(`/messages/${reply.id}`) && String(body(c).content).includes('Stopped by'), 5_000);
    expect(Date.now() - clicked).toBeLessThanOrEqual(STOP_WITHIN_MS);
    expect(body(ended).content).toMatch(new RegExp(`^word0\\b[\\s\\S]*_Stopped by <@${DEFAULT_USER.id}>\\._$`));
    expect(body(ended).content).not.toContain('word39');
    // The Stop button is gone and an unfinished answer gets no feedback buttons.
    expect(body(ended).components).toEqual([]);
    await bot.core.gateway.idle();
    await waitFor('the model call abandoned', () => openai.abandoned >= abandonedBefore + 1);
    expect(openai.abandoned).toBe(abandonedBefore + 1);
  });

  it('/hermes stop follows the same rule: someone else is refused privately, the requester stops the task', async () => {
    const { discord, openai } = bot;
    await bot.core.gateway.idle();
    const abandonedBefore = openai.abandoned;
    openai.enqueue(slowReply());
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'write a lot', mentionBot: true });
    const post = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).message_reference?.message_id === id);
    const reply = post.response as APIMessage;
    const edited = (token: string) => discord.waitForCall((c) => c.method === 'PATCH' && c.path === `/webhooks/${discord.applicationId}/${token}/messages/@original`, 15_000, 'the edited reply');

    const other = discord.runSlashCommand({ user: bob, text: 'stop' });
    expect(body(await edited(other.token)).content).toBe(`Only <@${DEFAULT_USER.id}> (who asked) or an admin can stop this task.`);
    const own = discord.runSlashCommand({ user: DEFAULT_USER, text: 'stop' });
    expect(body(await edited(own.token)).content).toBe('OK: stopped the running task.');
    const ended = await discord.waitForCall((c) => c.method === 'PATCH' && c.path.endsWith(`/messages/${reply.id}`) && String(body(c).content).includes('Stopped by'), 5_000);
    expect(body(ended).content).toMatch(new RegExp(`_Stopped by <@${DEFAULT_USER.id}>\\._$`));
    expect(body(ended).components).toEqual([]);
    // The model stream was given up (awaited, so the next test's count starts clean).
    await bot.core.gateway.idle();
    await waitFor('the model call abandoned', () => openai.abandoned === abandonedBefore + 1);
  });

  it('the final reply carries 👍 / 👎; a vote is stored with turn and voter and a second vote replaces it', async () => {
    const { discord, openai } = bot;
    openai.enqueue({ text: 'Short answer.' });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'quick one', mentionBot: true });
    const post = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${discord.channelId}/messages` && body(c).message_reference?.message_id === id);
    const reply = post.response as APIMessage;
    const final = await discord.waitForCall((c) => (c === post || (c.method === 'PATCH' && c.path.endsWith(`/messages/${reply.id}`))) && buttons(body(c)).length === 2);
    const [up, down] = buttons(body(final));
    expect([up!.emoji?.name, down!.emoji?.name]).toEqual(['👍', '👎']);
    const turnId = down!.custom_id.split(':').at(-1)!;

    const first = discord.clickButton({ user: bob, message: reply, customId: down!.custom_id });
    const thanks = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/webhooks/${discord.applicationId}/tok-${first}`);
    expect(body(thanks).content).toMatch(/Thanks for the 👎/);
    const second = discord.clickButton({ user: bob, message: reply, customId: up!.custom_id });
    const changed = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/webhooks/${discord.applicationId}/tok-${second}`);
    expect(body(changed).content).toBe('Changed your vote on this answer to 👍.');
    const votes = await createFeedbackStore(bot.core.database.db).votesFor(turnId);
    expect(votes).toMatchObject([{ turnId, vote: 'up', platform: 'discord' }]);
    expect(votes[0]!.voter).toContain(bob.id);
  });
});
