import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { scheduleTools } from '../../tools/schedules.js';
import { renderMrkdwn } from '../../adapters/slack/render-mrkdwn.js';
import { NOT_ALLOWED, NOT_AN_APPROVER } from '../../src/gateway/user-messages.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { advanceUntil, ManualClock } from '../reminders/manual-clock.js';
import { startSlackHarness, type SlackHarness } from '../slack/slack-harness.js';

/**
 * Channel policies on Slack end to end: the real Bolt app and core against the fake Slack and fake
 * OpenAI, with a hermes.config.yaml holding the policies. Each door: the model's tool list, a
 * forced call, approvals, `respond: all`, budgets, `/hermes policy`, a scheduled run after the
 * policy changed, and reloads (valid and invalid).
 */

const runs: string[] = [];
const tool = (name: string, needsApproval = false) =>
  defineTool({
    name,
    description: `Test tool ${name}`,
    input: z.object({ target: z.string() }),
    needsApproval,
    sideEffects: needsApproval,
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
  slack:CENG:
    tools: {allow: [deploy, lookup, schedule_task, secret_tool]}
    instructions: Engineering rule two.
    approvers: [slack:ULEAD]
  slack:CHELP:
    respond: all
  slack:CBUDGET:
    daily_tokens: 300
  slack:CPRIV:
    users: [slack:UMEMBER]
    approvers: [slack:UAPPR]
    model: private-model
`;

const T0 = Date.UTC(2026, 10, 30, 9, 0, 0);
let h: SlackHarness;
let dir: string;
let file: string;
const clock = new ManualClock(T0);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-policy-slack-'));
  file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, POLICIES);
  h = await startSlackHarness({
    extraTools: [tool('deploy', true), tool('lookup'), tool('secret_tool'), ...scheduleTools],
    env: { HERMES_CONFIG: file, HERMES_ADMINS: 'slack:UADMIN', HERMES_SCHEDULE_MIN_INTERVAL_S: '1', HERMES_GROUNDING: 'off' },
    clock,
    dueTimer: true,
  });
});
afterAll(async () => {
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

const toolNames = (req: ChatCompletionRequestBody) => (req.tools ?? []).map((t) => (t.type === 'function' ? t.function.name : ''));
const systemText = (req: ChatCompletionRequestBody) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');
const toolMessages = (req: ChatCompletionRequestBody) => req.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
const answered = (text: string) => h.slack.waitFor(`the answer "${text}"`, () => h.slack.posts().some((p) => p.text.includes(text)));
const ephemeralsTo = (userId: string) => h.slack.callsTo('chat.postEphemeral').filter((c) => c.args.user === userId);

describe('channel policies on slack', () => {
  it('offers only the allowed tools, adds the channel instructions after the default ones, and refuses a forced call to a denied tool', async () => {
    const before = h.ai.requests.length;
    h.ai.enqueue({ toolCalls: [{ id: 'call_secret', name: 'secret_tool', arguments: { target: 'vault' } }] }, { text: 'Could not use it here.' });
    await h.mention('CENG', 'UDEV', 'use the secret tool');
    await answered('Could not use it here.');
    const [first, second] = h.ai.requests.slice(before);
    // allow lists secret_tool, but default's deny still holds (deny wins): absent from the list.
    expect(toolNames(first!).sort()).toEqual(['deploy', 'lookup', 'schedule_task']);
    const sys = systemText(first!);
    expect(sys.indexOf('House rule one.')).toBeGreaterThan(0);
    expect(sys.indexOf('Engineering rule two.')).toBeGreaterThan(sys.indexOf('House rule one.'));
    expect(toolMessages(second!)).toEqual([expect.stringContaining('secret_tool did not run: the policy of this channel does not allow it here')]);
    expect(runs.filter((r) => r.startsWith('secret_tool'))).toEqual([]);

    // Elsewhere only the default applies: every other tool is offered, secret_tool still not.
    h.ai.enqueue({ text: 'answer under the default policy' });
    await h.mention('CGEN', 'UDEV', 'hello');
    await answered('answer under the default policy');
    const names = toolNames(h.ai.requests.at(-1)!);
    expect(names).toEqual(expect.arrayContaining(['lookup', 'list_scheduled_tasks', 'deploy']));
    expect(names).not.toContain('secret_tool');
    expect(systemText(h.ai.requests.at(-1)!)).not.toContain('Engineering rule two.');
  });

  it('an approval in the channel is decided only by the requester, an admin or a listed approver', async () => {
    h.ai.enqueue({ toolCalls: [{ id: 'call_deploy', name: 'deploy', arguments: { target: 'prod' } }] });
    const root = await h.mention('CENG', 'UDEV', 'deploy prod');
    const promptOf = () => h.slack.posts({ channel: 'CENG' }).find((p) => Array.isArray(p.args.blocks) && p.args.thread_ts === root && JSON.stringify(p.args.blocks).includes('hermes_approve'));
    await h.slack.waitFor('the approval prompt', () => promptOf() !== undefined);
    const prompt = promptOf()!;
    const approvalId = JSON.stringify(prompt.args.blocks).match(/"value":"([^"]+)"/)![1]!;

    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: approvalId, userId: 'UOTHER', channelId: 'CENG', messageTs: prompt.ts, threadTs: root });
    await h.slack.waitFor('the private refusal', () => ephemeralsTo('UOTHER').length === 1);
    expect(ephemeralsTo('UOTHER')[0]!.args.text).toBe(renderMrkdwn(NOT_AN_APPROVER));
    expect(runs.filter((r) => r.startsWith('deploy'))).toEqual([]);

    h.ai.enqueue({ text: 'Deployed prod.' });
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: approvalId, userId: 'ULEAD', channelId: 'CENG', messageTs: prompt.ts, threadTs: root });
    await answered('Deployed prod.');
    expect(runs.filter((r) => r.startsWith('deploy'))).toEqual(['deploy:prod']);
  });

  it('respond: all answers a message without a mention there, and only there', async () => {
    h.ai.enqueue({ text: 'help channel answer' });
    await h.say('CHELP', 'UNEW', 'how do I reset my password?');
    await answered('help channel answer');
    const before = h.ai.requests.length;
    await h.say('CGEN', 'UNEW', 'just chatting');
    // The same kind of message elsewhere is ignored: a mention right after is the next model call.
    h.ai.enqueue({ text: 'mentioned answer' });
    await h.mention('CGEN', 'UNEW', 'now I mention you');
    await answered('mentioned answer');
    expect(h.ai.requests.length).toBe(before + 1);
    expect(JSON.stringify(h.ai.requests.at(-1)!.messages)).not.toContain('just chatting');
  });

  it('users narrow who is answered in the channel (approvers and admins pass); the channel model is used there', async () => {
    const before = h.ai.requests.length;
    h.ai.enqueue({ text: 'private answer for the member' });
    await h.mention('CPRIV', 'UMEMBER', 'hello');
    await answered('private answer for the member');
    expect(h.ai.requests[before]!.model).toBe('private-model');

    await h.mention('CPRIV', 'UOUTSIDER', 'let me in');
    await h.slack.waitFor('the private notice', () => ephemeralsTo('UOUTSIDER').length === 1);
    expect(ephemeralsTo('UOUTSIDER')[0]!.args.text).toBe(renderMrkdwn(NOT_ALLOWED));
    expect(h.ai.requests.length).toBe(before + 1);

    h.ai.enqueue({ text: 'private answer for the approver' }, { text: 'private answer for the admin' });
    await h.mention('CPRIV', 'UAPPR', 'status?');
    await answered('private answer for the approver');
    await h.mention('CPRIV', 'UADMIN', 'and now?');
    await answered('private answer for the admin');
    expect(h.ai.requests.length).toBe(before + 3);
    // Elsewhere the outsider is answered, with the bot's model.
    h.ai.enqueue({ text: 'general answer for the outsider' });
    await h.mention('CGEN', 'UOUTSIDER', 'hi');
    await answered('general answer for the outsider');
    expect(h.ai.requests.at(-1)!.model).not.toBe('private-model');
  });

  it('a channel budget stops the model call, for admins too', async () => {
    h.ai.enqueue({ text: 'first budget answer', usage: { prompt_tokens: 250, completion_tokens: 100 } });
    await h.mention('CBUDGET', 'UDEV', 'spend');
    await answered('first budget answer');
    const before = h.ai.requests.length;
    await h.mention('CBUDGET', 'UDEV', 'spend more');
    await answered('channel has used its daily allowance of 300 tokens (350 today');
    await h.mention('CBUDGET', 'UADMIN', 'admin spends');
    await h.slack.waitFor('the admin refusal', () => h.slack.posts({ channel: 'CBUDGET' }).filter((p) => p.text.includes('daily allowance')).length === 2);
    expect(h.ai.requests.length).toBe(before);
  });

  it('/hermes policy answers privately with the policy in force where it is asked', async () => {
    const { responseId } = await h.slack.sendCommand(h.target, { text: 'policy', userId: 'UDEV', channelId: 'CENG' });
    await h.slack.waitFor('the policy answer', () => h.slack.responses.some((r) => r.id === responseId));
    const body = h.slack.responses.find((r) => r.id === responseId)!.body as { response_type: string; text: string };
    expect(body.response_type).toBe('ephemeral');
    expect(body.text).toContain('`default` → `slack:CENG`');
    expect(body.text).toMatch(/Offered to me here now: [^\n]*deploy/);
    expect(body.text).toMatch(/Withheld by this policy: [^\n]*secret_tool/);
    expect(body.text).toContain('slack:ULEAD');
  });

  it('an invalid reload keeps the policy in force; a valid one (SIGHUP path and file change) applies to the next scheduled run', async () => {
    // A schedule in CENG, made while lookup is allowed there.
    h.ai.enqueue({ toolCalls: [{ id: 'call_sched', name: 'schedule_task', arguments: { task: 'look up the build', schedule: 'every 2 seconds', name: 'Builds' } }] }, { text: 'Scheduled.' });
    await h.mention('CENG', 'UDEV', 'check the build every 2 seconds');
    await answered('Scheduled.');

    await writeFile(file, `${POLICIES}\n  slack:CBAD:\n    respond: sometimes\n`);
    const rejected = h.core.reloadConfig('signal');
    expect(rejected).toMatchObject({ ok: false, errors: [expect.stringContaining('channels.slack:CBAD.respond')] });
    expect(h.core.policies.at({ platform: 'slack', workspaceId: 'T1', channelId: 'CENG', isDm: false }).tools.allow).toContain('lookup');

    // The file now denies lookup in CENG; the watcher reads it (stat polling) without a signal.
    await writeFile(file, POLICIES.replace('allow: [deploy, lookup, schedule_task, secret_tool]', 'allow: [deploy, lookup, schedule_task, secret_tool], deny: [lookup]'));
    await h.slack.waitFor('the reload', () => h.core.policies.at({ platform: 'slack', workspaceId: 'T1', channelId: 'CENG', isDm: false }).tools.deny?.includes('lookup') === true, 10_000);

    const before = h.ai.requests.length;
    h.ai.setHandler((req) => (toolMessages(req).length ? { text: 'run done' } : { toolCalls: [{ id: 'call_forced', name: 'lookup', arguments: { target: 'build' } }] }));
    // Time moves a second at a time (real pauses let the run's I/O happen) until the run is posted.
    await advanceUntil(clock, () => h.slack.posts().some((p) => p.text.startsWith('⏰ Builds')), { stepMs: 1000, maxSteps: 30, pauseMs: 100 });
    const run = h.ai.requests.slice(before);
    expect(toolNames(run[0]!)).not.toContain('lookup');
    expect(toolMessages(run[1]!)).toEqual([expect.stringContaining('lookup did not run: the policy of this channel does not allow it here')]);
    expect(runs.filter((r) => r.startsWith('lookup'))).toEqual([]);

    // Tests run in any order: the file as the others expect it, in force again.
    h.ai.setHandler(() => ({ text: 'ok' }));
    await writeFile(file, POLICIES);
    expect(h.core.reloadConfig('signal')).toMatchObject({ ok: true, changed: ['channels'] });
  });
});
