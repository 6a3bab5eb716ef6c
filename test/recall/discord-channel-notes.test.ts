import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageFlags, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { CHANNEL_NOTES_HEADING } from '../../src/agent/system-prompt.js';
import { DEFAULT_USER, MEMBER_ROLE, startFakeDiscord, type RestCall } from '../fakes/discord/fake-discord.js';
import { user } from '../fakes/discord/payloads.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { startBot, type Bot } from '../discord/discord-harness.js';

/**
 * Channel notes on Discord end to end: the real discord.js client and core against the fake
 * Discord and fake OpenAI. `/hermes notes set` by an admin and by a member with the channel
 * policy's approver role; anyone else is refused in an ephemeral reply; the next turn in that
 * channel (and in a thread under it) carries the notes in the system prompt, another channel not.
 */

const ADMIN = user('100000000000000007', 'ada');
const LEAD = user('100000000000000008', 'lea');
/** A role the fake guild defines (discord.js keeps only a member's roles the guild knows). */
const LEAD_ROLE = MEMBER_ROLE.id;
const OTHER_CHANNEL = '300000000000000004';

let bot: Bot;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-notes-discord-'));
  const discord = await startFakeDiscord();
  const file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, `channels:\n  discord:channel:${discord.channelId}:\n    approvers: [discord:role:${LEAD_ROLE}]\n`);
  bot = await startBot({ discord, env: { HERMES_CONFIG: file, HERMES_ADMINS: `discord:${ADMIN.id}` } });
});
afterAll(async () => {
  await bot?.close();
  await bot?.discord.close();
  await rm(dir, { recursive: true, force: true });
});

type Body = RESTPostAPIChannelMessageJSONBody & { type?: number; data?: { flags?: number; content?: string } };
const body = (c: RestCall) => (c.body ?? {}) as Body;
const systemText = (req: ChatCompletionRequestBody) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');

/** Runs `/hermes <text>` and returns the private (ephemeral) answer's text. */
async function command(who: typeof DEFAULT_USER, text: string, opts: { channelId?: string; roles?: string[] } = {}): Promise<string> {
  const { discord } = bot;
  const { interactionId, token } = discord.runSlashCommand({ user: who, text, ...opts });
  const deferral = await discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${interactionId}/`), 15_000, 'the deferral');
  expect(body(deferral).data?.flags).toBe(MessageFlags.Ephemeral);
  const reply = await discord.waitForCall((c) => c.method === 'PATCH' && c.path === `/webhooks/${discord.applicationId}/${token}/messages/@original`, 15_000, 'the edited reply');
  return String(body(reply).content);
}

async function turn(send: () => string, channelId: string, answer: string): Promise<ChatCompletionRequestBody> {
  const { discord, openai } = bot;
  const before = openai.requests.length;
  openai.enqueue({ text: answer });
  send();
  await discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && body(c).content === answer, 20_000, `the answer "${answer}"`);
  expect(openai.requests.length).toBe(before + 1);
  return openai.requests.at(-1)!;
}

describe('channel notes on discord', () => {
  it('set by the approver role (others refused privately), shown with /hermes notes, and in the model request of the next turns there only', async () => {
    const { discord } = bot;
    expect(await command(DEFAULT_USER, 'notes')).toMatch(/This channel has no notes/);
    expect(await command(DEFAULT_USER, 'notes set Deploys go through #ops.')).toMatch(/Only admins and this channel's approvers can change its notes/);
    // The role counts only where the policy names it.
    expect(await command(LEAD, 'notes set Not here.', { channelId: OTHER_CHANNEL, roles: [LEAD_ROLE] })).toMatch(/Only admins and this channel's approvers/);
    expect(await command(LEAD, 'notes set Deploys go through #ops. Our fiscal year starts in April.', { roles: [LEAD_ROLE] })).toMatch(/Saved the notes of this channel/);
    expect(await command(DEFAULT_USER, 'notes')).toMatch(/Notes of this channel[\s\S]*Deploys go through #ops\. Our fiscal year starts in April\./);

    const inChannel = await turn(() => discord.sendGuildMessage({ author: DEFAULT_USER, content: 'when does our year start?', mentionBot: true }), discord.channelId, 'In April.');
    expect(systemText(inChannel)).toContain(`${CHANNEL_NOTES_HEADING}\nDeploys go through #ops. Our fiscal year starts in April.`);
    expect(inChannel.messages.filter((m) => m.role === 'user').some((m) => JSON.stringify(m.content).includes('fiscal year'))).toBe(false);

    // A thread under the channel shares its notes.
    const threadId = '400000000000000071';
    const inThread = await turn(() => discord.sendThreadMessage({ author: DEFAULT_USER, content: 'and deploys?', threadId, mentionBot: true }), threadId, 'Through #ops.');
    expect(systemText(inThread)).toContain('Deploys go through #ops.');

    const elsewhere = await turn(() => discord.sendGuildMessage({ author: DEFAULT_USER, content: 'hello', mentionBot: true, channelId: OTHER_CHANNEL }), OTHER_CHANNEL, 'Hi.');
    expect(systemText(elsewhere)).not.toContain(CHANNEL_NOTES_HEADING);

    // An admin clears them; the next turn there has none.
    expect(await command(DEFAULT_USER, 'notes clear')).toMatch(/Only admins/);
    expect(await command(ADMIN, 'notes clear')).toBe('Cleared the notes of this channel.');
    const after = await turn(() => discord.sendGuildMessage({ author: DEFAULT_USER, content: 'and now?', mentionBot: true }), discord.channelId, 'No notes.');
    expect(systemText(after)).not.toContain(CHANNEL_NOTES_HEADING);
  });
});
