import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ButtonStyle, ComponentType, InteractionResponseType, MessageFlags, type APIMessage, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { DEFAULT_USER, type RestCall } from '../fakes/discord/fake-discord.js';
import { user } from '../fakes/discord/payloads.js';
import { startBot, type Bot } from './discord-harness.js';

/**
 * Approve / Deny buttons end to end: real discord.js interactions, the real approval store. The
 * tests share one bot, so each looks only at the REST calls made after it started (`since`) and
 * passes alone or in any order.
 */

let bot: Bot;
beforeAll(async () => {
  bot = await startBot();
});
afterAll(async () => {
  await bot?.close();
});

/** A filter for the calls made from now on. */
function since(): (c: RestCall) => boolean {
  const start = bot.discord.calls.length;
  return (c) => bot.discord.calls.indexOf(c) >= start;
}

const body = (c: RestCall) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody & { type?: number; data?: { flags?: number } };
const bob = user('100000000000000011', 'bob');

/** Asks for risky_action in its own channel and returns the posted prompt. */
async function requestApproval(target: string, channelId: string): Promise<{ prompt: APIMessage; userMessageId: string }> {
  const { discord, openai } = bot;
  openai.enqueue({ toolCalls: [{ name: 'risky_action', arguments: { target } }] });
  const fresh = since();
  const userMessageId = discord.sendGuildMessage({ author: DEFAULT_USER, content: `please do it to ${target}`, mentionBot: true, channelId });
  const call = await discord.waitForCall((c) => fresh(c) && c.method === 'POST' && c.path === `/channels/${channelId}/messages` && JSON.stringify(body(c).components ?? []).includes('hermes:approve:'), 15_000, 'the approval prompt');
  return { prompt: call.response as APIMessage, userMessageId };
}

function buttonId(prompt: APIMessage, label: 'Approve' | 'Deny'): string {
  const row = prompt.components?.[0];
  if (row?.type !== ComponentType.ActionRow) throw new Error('no action row');
  const button = row.components.find((b) => b.type === ComponentType.Button && 'label' in b && b.label === label);
  if (!button || !('custom_id' in button)) throw new Error(`no ${label} button`);
  return button.custom_id;
}

const edits = (messageId: string) => bot.discord.calls.filter((c) => c.method === 'PATCH' && c.path.endsWith(`/messages/${messageId}`));
const callbackFor = (interactionId: string) => bot.discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${interactionId}/`), 15_000, 'the interaction callback');

describe('discord approvals', () => {
  it('posts the prompt with tool, exact arguments and two buttons; Approve runs the tool once and edits the prompt', async () => {
    const { discord, openai } = bot;
    const fresh = since();
    const channelId = '300000000000000003';
    const { prompt, userMessageId } = await requestApproval('prod-db', channelId);
    expect(prompt.content).toContain('`risky_action`');
    expect(prompt.content).toContain('```json\n{\n  "target": "prod-db"\n}\n```');
    expect(prompt.message_reference?.message_id).toBe(userMessageId);
    const row = prompt.components![0]!;
    expect(row.type).toBe(ComponentType.ActionRow);
    const [approve, deny] = (row as { components: Array<{ style: number; label: string; custom_id: string }> }).components;
    expect(approve).toMatchObject({ style: ButtonStyle.Success, label: 'Approve' });
    expect(deny).toMatchObject({ style: ButtonStyle.Danger, label: 'Deny' });
    expect(approve!.custom_id).toMatch(/^hermes:approve:/);
    expect(approve!.custom_id.length).toBeLessThanOrEqual(100);

    openai.enqueue({ text: 'All done with prod-db.' });
    const interactionId = discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: approve!.custom_id });
    const callback = await callbackFor(interactionId);
    expect(body(callback).type).toBe(InteractionResponseType.DeferredMessageUpdate);
    const edit = await discord.waitForCall((c) => fresh(c) && c.method === 'PATCH' && c.path === `/channels/${channelId}/messages/${prompt.id}`);
    expect(body(edit).components).toEqual([]);
    expect(body(edit).content).toContain(`approved by <@${DEFAULT_USER.id}>`);
    await discord.waitForCall((c) => fresh(c) && c.method === 'POST' && body(c).content === 'All done with prod-db.');
    expect(bot.riskyRuns.filter((r) => r.target === 'prod-db')).toEqual([{ target: 'prod-db' }]);
  });

  it('Deny edits the prompt, does not run the tool, and tells the model it did not run', async () => {
    const { discord, openai } = bot;
    const runs = bot.riskyRuns.length;
    const fresh = since();
    const channelId = '300000000000000004';
    const { prompt } = await requestApproval('staging', channelId);
    openai.enqueue({ text: 'Understood, I did not do it.' });
    discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: buttonId(prompt, 'Deny') });
    const edit = await discord.waitForCall((c) => fresh(c) && c.method === 'PATCH' && c.path === `/channels/${channelId}/messages/${prompt.id}`);
    expect(body(edit).content).toContain(`denied by <@${DEFAULT_USER.id}>`);
    expect(body(edit).components).toEqual([]);
    await discord.waitForCall((c) => fresh(c) && c.method === 'POST' && body(c).content === 'Understood, I did not do it.');
    expect(bot.riskyRuns.length).toBe(runs);
    // The channel's session may hold earlier tool results: the newest one answers this call.
    const toolMessage = openai.requests.at(-1)!.messages.filter((m) => m.role === 'tool').at(-1);
    expect(JSON.stringify(toolMessage)).toMatch(/did not run/i);
  });

  it("answers a non-requester's click privately and leaves the prompt alone; then a double click applies once", async () => {
    const { discord, openai } = bot;
    const runs = bot.riskyRuns.length;
    const fresh = since();
    const channelId = '300000000000000003';
    const { prompt } = await requestApproval('billing', channelId);
    const approveId = buttonId(prompt, 'Approve');

    const bobClick = discord.clickButton({ user: bob, message: prompt, customId: approveId });
    await callbackFor(bobClick);
    const token = `tok-${bobClick}`;
    const refusal = await discord.waitForCall((c) => c.method === 'POST' && c.path === `/webhooks/${discord.applicationId}/${token}`);
    expect(body(refusal).flags! & MessageFlags.Ephemeral).toBe(MessageFlags.Ephemeral);
    expect(body(refusal).content).toMatch(/only the person who asked/i);
    expect(edits(prompt.id)).toEqual([]);

    openai.enqueue({ text: 'Billing handled.' });
    const first = discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: approveId });
    const second = discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: approveId });
    await callbackFor(first);
    await callbackFor(second);
    // Both clicks race; whichever lost is told privately that it was already decided.
    const losers = [`tok-${first}`, `tok-${second}`].map((t) => `/webhooks/${discord.applicationId}/${t}`);
    const already = await discord.waitForCall((c) => fresh(c) && c.method === 'POST' && losers.includes(c.path));
    expect(body(already).flags! & MessageFlags.Ephemeral).toBe(MessageFlags.Ephemeral);
    expect(body(already).content).toMatch(/already decided/i);
    await discord.waitForCall((c) => fresh(c) && c.method === 'POST' && body(c).content === 'Billing handled.');
    await bot.core.gateway.idle();
    expect(bot.riskyRuns.length).toBe(runs + 1);
    expect(edits(prompt.id)).toHaveLength(1);
  });

  it('acknowledges every click within 3 seconds: a stranger, the requester twice, and a stale button', async () => {
    const { discord, openai } = bot;
    const { prompt } = await requestApproval('ack-check', '300000000000000004');
    const denyId = buttonId(prompt, 'Deny');
    openai.enqueue({ text: 'Not doing ack-check.' });
    const clicks = [
      discord.clickButton({ user: bob, message: prompt, customId: denyId }),
      discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: denyId }),
      discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: denyId }),
      discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: 'hermes:approve:no-such-approval' }),
    ];
    for (const id of clicks) {
      const callback = await callbackFor(id);
      const created = Number((BigInt(id) >> 22n) + 1420070400000n);
      expect(callback.at - created).toBeLessThan(3000);
    }
    await bot.core.gateway.idle();
  });

  it('survives a restart with an approval pending: Approve after the restart runs the tool once', async () => {
    const { discord, openai } = bot;
    const runs = bot.riskyRuns.length;
    const identifies = discord.gateway.identifies.length;
    const fresh = since();
    const channelId = '300000000000000004';
    const { prompt } = await requestApproval('after-restart', channelId);
    await bot.restart();
    openai.enqueue({ text: 'Done after the restart.' });
    discord.clickButton({ user: DEFAULT_USER, message: prompt, customId: buttonId(prompt, 'Approve') });
    const edit = await discord.waitForCall((c) => fresh(c) && c.method === 'PATCH' && c.path === `/channels/${channelId}/messages/${prompt.id}`, 15_000);
    expect(body(edit).content).toContain(`approved by <@${DEFAULT_USER.id}>`);
    await discord.waitForCall((c) => fresh(c) && c.method === 'POST' && body(c).content === 'Done after the restart.', 15_000);
    await bot.core.gateway.idle();
    expect(bot.riskyRuns.slice(runs)).toEqual([{ target: 'after-restart' }]);
    expect(discord.gateway.identifies.length).toBe(identifies + 1);
  });
});
