import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MessageFlags, type APIMessage, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { scheduleTools } from '../../tools/schedules.js';
import { NOT_ALLOWED, NOT_AN_APPROVER } from '../../src/gateway/user-messages.js';
import { DEFAULT_USER, MEMBER_ROLE, type RestCall } from '../fakes/discord/fake-discord.js';
import { user } from '../fakes/discord/payloads.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { advanceUntil, ManualClock } from '../reminders/manual-clock.js';
import { startBot, type Bot } from '../discord/discord-harness.js';

/**
 * Channel policies on Discord end to end: the real discord.js client and core against the fake
 * Discord and fake OpenAI, with a hermes.config.yaml holding the policies (the Slack twin is
 * slack-policy.e2e.test.ts). Each door: the model's tool list and a forced call, who may decide an
 * approval, `/hermes policy`, a scheduled run after the policy changed (checked at run time), and
 * the budgets — a channel's `daily_tokens` and the bot-wide HERMES_DAILY_TOKENS with its one
 * 80 % notice a day to admins — stopping the model call, for admins too.
 */

const GUILD = '200000000000000002';
const ENG = '300000000000000003'; // the fake guild's #general, engineering here
const BUDGET = '300000000000000004'; // #random, with a channel budget
const bob = user('100000000000000011', 'bob');
const carol = user('100000000000000012', 'carol'); // the channel's approver
const admin = user('100000000000000013', 'admin');
const dave = user('100000000000000014', 'dave'); // holds MEMBER_ROLE
const THREAD = '400000000000000044'; // a thread of ENG with its own policy

const runs: string[] = [];
const tool = (name: string) =>
  defineTool({
    name,
    description: `Test tool ${name}`,
    input: z.object({ target: z.string() }),
    async run(args) {
      runs.push(`${name}:${args.target}`);
      return `${name} did ${args.target}`;
    },
  });

const POLICIES = `
tools:
  schedule_task: {needsApproval: false}
channels:
  default:
    tools: {deny: [secret_tool]}
    instructions: House rule one.
  discord:guild:${GUILD}:
    instructions: Guild rule.
  discord:channel:${ENG}:
    tools: {allow: [risky_action, lookup, schedule_task, secret_tool]}
    instructions: Engineering rule two.
    approvers: [discord:${carol.id}]
  discord:channel:${BUDGET}:
    daily_tokens: 300
  discord:channel:${THREAD}:
    respond: all
    model: thread-model
    roles: ["${MEMBER_ROLE.id}"]
`;

type Body = RESTPostAPIChannelMessageJSONBody & { type?: number; flags?: number; recipient_id?: string };
const body = (c: RestCall) => (c.body ?? {}) as Body;
const toolNames = (req: ChatCompletionRequestBody) => (req.tools ?? []).map((t) => (t.type === 'function' ? t.function.name : ''));
const systemText = (req: ChatCompletionRequestBody) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');
const toolMessages = (req: ChatCompletionRequestBody) => req.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** A bot with its own config file (removed at the end). */
async function policyBot(config: string, env: Record<string, string>, clock: ManualClock): Promise<{ bot: Bot; file: string; close(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-policy-discord-'));
  const file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, config);
  const bot = await startBot({ env: { HERMES_CONFIG: file, HERMES_GROUNDING: 'off', ...env }, tools: [tool('lookup'), tool('secret_tool'), ...scheduleTools], clock });
  return {
    bot,
    file,
    async close() {
      await bot.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const posted = (bot: Bot, channelId: string, text: string) =>
  bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages` && String(body(c).content ?? '').includes(text), 15_000, `"${text}" in ${channelId}`);
const postsWith = (bot: Bot, channelId: string, text: string) => bot.discord.postedIn(channelId).filter((c) => String(body(c).content ?? '').includes(text));

describe('channel policies on discord', () => {
  const clock = new ManualClock(Date.now());
  let ctx: Awaited<ReturnType<typeof policyBot>>;
  let bot: Bot;
  beforeAll(async () => {
    ctx = await policyBot(POLICIES, { HERMES_ADMINS: `discord:${admin.id}`, HERMES_SCHEDULE_MIN_INTERVAL_S: '1' }, clock);
    bot = ctx.bot;
  });
  afterAll(async () => {
    await ctx?.close();
  });

  it('offers only the allowed tools, adds guild and channel instructions after the default ones, and refuses a forced call to a denied tool', async () => {
    const before = bot.openai.requests.length;
    bot.openai.enqueue({ toolCalls: [{ id: 'call_secret', name: 'secret_tool', arguments: { target: 'vault' } }] }, { text: 'Could not use it here.' });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'use the secret tool', mentionBot: true, channelId: ENG });
    await posted(bot, ENG, 'Could not use it here.');
    const [first, second] = bot.openai.requests.slice(before);
    // The channel's allow list names secret_tool, but default's deny still holds (deny wins).
    expect(toolNames(first!).sort()).toEqual(['lookup', 'risky_action', 'schedule_task']);
    const sys = systemText(first!);
    const [house, guild, eng] = ['House rule one.', 'Guild rule.', 'Engineering rule two.'].map((t) => sys.indexOf(t));
    expect(house).toBeGreaterThan(0);
    expect(guild).toBeGreaterThan(house!);
    expect(eng).toBeGreaterThan(guild!);
    // The channel's session may hold earlier tool results (tests run in any order): the newest answers this call.
    expect(toolMessages(second!).at(-1)).toContain('secret_tool did not run: the policy of this channel does not allow it here');
    expect(runs.filter((r) => r.startsWith('secret_tool'))).toEqual([]);
    const refused = await bot.core.audit.list({ kind: 'tool_refused', channel: `discord:${ENG}` }, { limit: 10, offset: 0 });
    expect(refused.entries.filter((e) => e.tool === 'secret_tool').map((e) => e.actor)).toEqual([`discord:${DEFAULT_USER.id}`]);

    // In a DM only default applies: the rest is offered, secret_tool still not, no guild rule.
    bot.openai.enqueue({ text: 'dm answer' });
    const dm = bot.discord.sendDm({ author: DEFAULT_USER, content: 'hello' });
    await posted(bot, dm.channelId, 'dm answer');
    const names = toolNames(bot.openai.requests.at(-1)!);
    expect(names).toEqual(expect.arrayContaining(['lookup', 'risky_action', 'list_scheduled_tasks']));
    expect(names).not.toContain('secret_tool');
    expect(systemText(bot.openai.requests.at(-1)!)).not.toContain('Guild rule.');
  });

  it('an approval in the channel is decided only by the requester, an admin or a listed approver', async () => {
    bot.openai.enqueue({ toolCalls: [{ id: 'call_risky', name: 'risky_action', arguments: { target: 'prod' } }] });
    const start = bot.discord.calls.length;
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'deploy prod', mentionBot: true, channelId: ENG });
    const call = await bot.discord.waitForCall(
      (c) => bot.discord.calls.indexOf(c) >= start && c.method === 'POST' && c.path === `/channels/${ENG}/messages` && JSON.stringify(body(c).components ?? []).includes('hermes:approve:'),
      15_000,
      'the approval prompt',
    );
    const prompt = call.response as APIMessage;
    const approveId = JSON.stringify(prompt.components).match(/"custom_id":"(hermes:approve:[^"]+)"/)![1]!;

    const bobClick = bot.discord.clickButton({ user: bob, message: prompt, customId: approveId });
    const refusal = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/webhooks/${bot.discord.applicationId}/tok-${bobClick}`, 15_000, "bob's private refusal");
    expect(body(refusal).flags! & MessageFlags.Ephemeral).toBe(MessageFlags.Ephemeral);
    expect(body(refusal).content).toBe(NOT_AN_APPROVER);
    expect(bot.riskyRuns).toEqual([]);
    const refusedRows = await bot.core.audit.list({ kind: 'approval', actor: `discord:${bob.id}` }, { limit: 10, offset: 0 });
    expect(refusedRows.entries.map((e) => e.outcome)).toEqual(['refused']);

    bot.openai.enqueue({ text: 'Deployed prod.' });
    bot.discord.clickButton({ user: carol, message: prompt, customId: approveId });
    await posted(bot, ENG, 'Deployed prod.');
    expect(bot.riskyRuns).toEqual([{ target: 'prod' }]);
    const approved = await bot.core.audit.list({ kind: 'approval', actor: `discord:${carol.id}` }, { limit: 10, offset: 0 });
    expect(approved.entries.map((e) => [e.outcome, e.tool])).toEqual([['approved', 'risky_action']]);
  });

  it('/hermes policy answers privately with the policy in force where it is asked', async () => {
    const { interactionId, token } = bot.discord.runSlashCommand({ user: bob, text: 'policy', channelId: ENG });
    const deferral = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${interactionId}/`), 15_000, 'the deferral');
    expect((body(deferral) as { data?: { flags?: number } }).data?.flags).toBe(MessageFlags.Ephemeral);
    const reply = await bot.discord.waitForCall((c) => c.method === 'PATCH' && c.path === `/webhooks/${bot.discord.applicationId}/${token}/messages/@original`, 15_000, 'the policy answer');
    const text = String(body(reply).content);
    expect(text).toContain(`\`default\` → \`discord:guild:${GUILD}\` → \`discord:channel:${ENG}\``);
    expect(text).toMatch(/Offered to me here now: [^\n]*risky_action/);
    expect(text).toMatch(/Withheld by this policy: [^\n]*secret_tool/);
    expect(text).toContain(`discord:${carol.id}`);
  });

  it('a scheduled run obeys the policy in force when it runs, not the one when it was made; an invalid file changes nothing', async () => {
    bot.openai.enqueue({ toolCalls: [{ id: 'call_sched', name: 'schedule_task', arguments: { task: 'look up the build', schedule: 'every 2 seconds', name: 'Builds' } }] }, { text: 'Scheduled.' });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'check the build every 2 seconds', mentionBot: true, channelId: ENG });
    await posted(bot, ENG, 'Scheduled.');

    // An invalid file (a typo in a key) is rejected whole: lookup stays allowed.
    await writeFile(ctx.file, `${POLICIES}\n  discord:channel:${BUDGET}x:\n    respond: all\n`);
    expect(bot.core.reloadConfig('signal')).toMatchObject({ ok: false, errors: [expect.stringContaining('is not a policy key')] });
    const place = { platform: 'discord', workspaceId: GUILD, channelId: ENG, isDm: false };
    expect(bot.core.policies.at(place).tools.deny).toEqual(['secret_tool']);

    // The file now denies lookup in the channel; the file watch reads it without a signal.
    await writeFile(ctx.file, POLICIES.replace('allow: [risky_action, lookup, schedule_task, secret_tool]', 'allow: [risky_action, lookup, schedule_task, secret_tool], deny: [lookup]'));
    await bot.waitForLog((l) => l.msg === 'config reloaded' && l.trigger === 'file', 15_000);
    expect(bot.core.policies.at(place).tools.deny).toEqual(['lookup']);

    const before = bot.openai.requests.length;
    bot.openai.setHandler((req) => (toolMessages(req).length ? { text: 'run done' } : { toolCalls: [{ id: 'call_forced', name: 'lookup', arguments: { target: 'build' } }] }));
    // Time moves a second at a time (real pauses let the run's I/O happen) until the run is posted.
    await advanceUntil(clock, () => postsWith(bot, ENG, '⏰ Builds').length > 0, { stepMs: 1000, maxSteps: 30, pauseMs: 100 });
    const run = bot.openai.requests.slice(before);
    expect(toolNames(run[0]!)).not.toContain('lookup');
    expect(toolNames(run[0]!)).toContain('risky_action');
    expect(toolMessages(run[1]!)).toEqual([expect.stringContaining('lookup did not run: the policy of this channel does not allow it here')]);
    expect(runs.filter((r) => r.startsWith('lookup'))).toEqual([]);

    // Put the file back for tests that run after this one.
    bot.openai.setHandler(() => ({ text: 'ok' }));
    await writeFile(ctx.file, POLICIES);
    expect(bot.core.reloadConfig('signal')).toMatchObject({ ok: true, changed: ['channels'] });
  });

  it('a thread takes its channel\'s policy and adds its own: respond all, its model, only members with the role (and approvers, admins)', async () => {
    const before = bot.openai.requests.length;
    bot.openai.enqueue({ text: 'thread answer for dave' });
    // No mention: `respond: all` in the thread.
    bot.discord.sendThreadMessage({ author: dave, content: 'how do I run the tests?', threadId: THREAD, roles: [MEMBER_ROLE.id] });
    await posted(bot, THREAD, 'thread answer for dave');
    const req = bot.openai.requests[before]!;
    expect(req.model).toBe('thread-model');
    // The parent channel's tools and instructions hold in its thread (default → guild → channel → thread).
    expect(toolNames(req).sort()).toEqual(['lookup', 'risky_action', 'schedule_task']);
    expect(systemText(req)).toContain('Engineering rule two.');

    // bob has no role: no model call, one private notice (a DM), nothing in the thread.
    const mark = bot.openai.requests.length;
    bot.discord.sendThreadMessage({ author: bob, content: 'me too?', threadId: THREAD, mentionBot: true, roles: [] });
    const dm = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === '/users/@me/channels' && body(c).recipient_id === bob.id, 15_000, "bob's DM channel");
    const notice = await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${(dm.response as { id: string }).id}/messages`, 15_000, "bob's notice");
    expect(body(notice).content).toBe(NOT_ALLOWED);

    // The channel's approver and an admin are answered there without the role.
    bot.openai.enqueue({ text: 'thread answer for carol' }, { text: 'thread answer for the admin' });
    bot.discord.sendThreadMessage({ author: carol, content: 'status?', threadId: THREAD, roles: [] });
    await posted(bot, THREAD, 'thread answer for carol');
    bot.discord.sendThreadMessage({ author: admin, content: 'and now?', threadId: THREAD, roles: [] });
    await posted(bot, THREAD, 'thread answer for the admin');
    expect(bot.openai.requests.length).toBe(mark + 2);
    const access = await bot.core.audit.list({ kind: 'access_refused', actor: `discord:${bob.id}` }, { limit: 10, offset: 0 });
    expect(access.entries.map((e) => [e.outcome, e.channel])).toEqual([['not_allowed', `discord:${THREAD}`]]);
  });

  it("a channel budget stops the model call there, for admins too, and the refusal is audited", async () => {
    bot.openai.enqueue({ text: 'first budget answer', usage: { prompt_tokens: 250, completion_tokens: 100 } });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'spend', mentionBot: true, channelId: BUDGET });
    await posted(bot, BUDGET, 'first budget answer');
    const before = bot.openai.requests.length;
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'spend more', mentionBot: true, channelId: BUDGET });
    await posted(bot, BUDGET, 'This channel has used its daily allowance of 300 tokens (350 today; daily_tokens in its channel policy)');
    bot.discord.sendGuildMessage({ author: admin, content: 'admin spends', mentionBot: true, channelId: BUDGET });
    await bot.discord.waitForCall(() => postsWith(bot, BUDGET, 'daily allowance').length === 2, 15_000, 'the admin refusal');
    expect(bot.openai.requests.length).toBe(before);
    const rows = await bot.core.audit.list({ kind: 'limit_refused', channel: `discord:${BUDGET}` }, { limit: 10, offset: 0 });
    expect(rows.entries.map((e) => [e.actor, e.detail.budget])).toEqual([
      [`discord:${admin.id}`, 'channel'],
      [`discord:${DEFAULT_USER.id}`, 'channel'],
    ]);
    // Elsewhere the channel's budget does not bind.
    bot.openai.enqueue({ text: 'engineering still answers' });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'hello', mentionBot: true, channelId: ENG });
    await posted(bot, ENG, 'engineering still answers');
  });
});

describe('the bot-wide budget on discord', () => {
  const DAY = 86_400_000;
  // Noon UTC, so a few turns never cross midnight by accident.
  const clock = new ManualClock(Math.floor(Date.now() / DAY) * DAY + DAY / 2);
  let ctx: Awaited<ReturnType<typeof policyBot>>;
  let bot: Bot;
  beforeAll(async () => {
    ctx = await policyBot('channels:\n  default:\n    instructions: House rule one.\n', { HERMES_ADMINS: `discord:${admin.id}`, HERMES_DAILY_TOKENS: '1000' }, clock);
    bot = ctx.bot;
  });
  afterAll(async () => {
    await ctx?.close();
  });

  /** Messages the bot sent the admin in private (a DM channel opened for them). */
  const adminDms = (): string[] => {
    const dmIds = new Set(bot.discord.calls.filter((c) => c.method === 'POST' && c.path === '/users/@me/channels' && body(c).recipient_id === admin.id).map((c) => (c.response as { id: string }).id));
    return bot.discord.calls.filter((c) => c.method === 'POST' && [...dmIds].some((id) => c.path === `/channels/${id}/messages`)).map((c) => String(body(c).content));
  };
  const warnings = () => bot.logs.filter((l) => String(l.msg).includes('80 % of HERMES_DAILY_TOKENS'));
  async function turn(text: string, tokens: number): Promise<void> {
    bot.openai.enqueue({ text, usage: { prompt_tokens: tokens, completion_tokens: 0 } });
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: text, mentionBot: true, channelId: ENG });
    await posted(bot, ENG, text);
  }

  it('tells the admins once a day at 80 %, then stops every model call, admins included, until the next UTC day', async () => {
    await turn('answer one', 500);
    expect(warnings()).toHaveLength(0);
    await turn('answer two', 350); // 850 of 1,000: past 80 %
    await bot.discord.waitForCall(() => adminDms().length === 1, 15_000, 'the admin notice');
    expect(adminDms()[0]).toContain('the bot has used 85 % of its daily token budget (850 of 1,000; HERMES_DAILY_TOKENS)');
    await turn('answer three', 100); // 950: still past 80 %, not told again
    await turn('answer four', 100); // 1,050: the call that crosses the line finishes
    expect(warnings()).toHaveLength(1);
    expect(adminDms()).toHaveLength(1);

    const before = bot.openai.requests.length;
    bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: 'one more', mentionBot: true, channelId: ENG });
    await posted(bot, ENG, 'I have used my daily allowance for everyone of 1,000 tokens (1,050 today; HERMES_DAILY_TOKENS)');
    bot.discord.sendGuildMessage({ author: admin, content: 'admin asks', mentionBot: true, channelId: ENG });
    await bot.discord.waitForCall(() => postsWith(bot, ENG, 'daily allowance for everyone').length === 2, 15_000, 'the admin refusal');
    expect(bot.openai.requests.length).toBe(before);
    const rows = await bot.core.audit.list({ kind: 'limit_refused' }, { limit: 10, offset: 0 });
    expect(rows.entries.map((e) => [e.actor, e.detail.budget])).toEqual([
      [`discord:${admin.id}`, 'bot'],
      [`discord:${DEFAULT_USER.id}`, 'bot'],
    ]);

    // The next UTC day starts a new count, and a new notice once it passes 80 % again.
    clock.advance(DAY);
    await turn('answer next day', 900);
    await bot.discord.waitForCall(() => adminDms().length === 2, 15_000, "the next day's notice");
    expect(adminDms()[1]).toContain('90 % of its daily token budget (900 of 1,000');
    expect(warnings()).toHaveLength(2);
  });
});
