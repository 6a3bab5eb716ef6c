import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { scheduleTools } from '../../tools/schedules.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { ManualClock } from '../reminders/manual-clock.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

/**
 * Scheduled tasks end to end: real Bolt app and core on SQLite against the fake Slack and fake
 * OpenAI, with a 1-second minimum interval. The core's clock is a manual one, so due times come
 * when the test says so and "nothing else ran" is checked after moving time, not after sleeping.
 */
let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T0 = Date.UTC(2026, 10, 30, 9, 0, 0);
const SEC = 1_000;
const ENV = { HERMES_SCHEDULE_MIN_INTERVAL_S: '1', HERMES_TIMEZONE: 'Europe/Berlin' };

type Block = { type: string; text?: { text: string }; elements?: Array<{ action_id?: string; value?: string }> };

const lastUserText = (req: ChatCompletionRequestBody) => String(req.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
const isRun = (req: ChatCompletionRequestBody) => lastUserText(req).includes('[scheduled task');

async function start(clock: ManualClock, extra: Parameters<typeof startSlackHarness>[0] = {}) {
  const harness = await startSlackHarness({ extraTools: [...scheduleTools, ...(extra.extraTools ?? [])], env: { ...ENV, ...extra.env }, clock, dueTimer: true });
  let n = 0;
  // Every scheduled run answers with a numbered line, so each post can be matched to one run.
  harness.ai.setHandler((req) => (isRun(req) ? { text: `tick ${++n}` } : { text: 'ok' }));
  return harness;
}

const runPosts = (h: SlackHarness, name: string) => h.slack.posts().filter((p) => p.text.startsWith(`⏰ ${name}`));
const promptOf = (h: SlackHarness) => h.slack.approvalPrompts()[0];

/** Mentions the bot asking for a schedule; the model calls schedule_task with `args`. */
async function askToSchedule(h: SlackHarness, user: string, args: Record<string, unknown>, channel = 'C1') {
  h.ai.enqueue({ toolCalls: [{ id: `call_${user}`, name: 'schedule_task', arguments: args }] });
  return h.mention(channel, user, 'please schedule this');
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (real time) until the due timer has claimed what is due and every run has finished. */
async function quiet(h: SlackHarness): Promise<void> {
  await pause(60);
  const until = Date.now() + 15_000;
  const busy = async () => h.core.gateway.queueSize() > 0 || ((await h.core.store.get<unknown[]>('schedules:running')) ?? []).length > 0;
  while (Date.now() < until && (await busy())) await pause(20);
}

/** Moves the manual clock one second at a time until `done`, letting each second's runs finish first. */
async function tickUntil(h: SlackHarness, clock: ManualClock, done: () => boolean, maxSeconds = 30) {
  for (let i = 0; i < maxSeconds && !done(); i++) {
    clock.advance(SEC);
    await quiet(h);
  }
  if (!done()) throw new Error(`not reached after ${maxSeconds} s of manual time`);
}

describe('slack scheduled tasks', () => {
  it('asks for approval showing the schedule in words and the next three runs; runs post once each in the thread; unschedule stops them', async () => {
    const clock = new ManualClock(T0);
    h = await start(clock);
    const root = await askToSchedule(h, 'U1', { task: 'count the open bugs', schedule: 'every 2 seconds', name: 'Ticker' });
    await h.slack.waitFor('the approval prompt', () => promptOf(h!) !== undefined);
    const prompt = promptOf(h)!;
    expect(prompt).toMatchObject({ channel: 'C1', thread_ts: root });
    const text = (prompt.args.blocks as Block[]).map((b) => b.text?.text ?? '').join('\n');
    expect(text).toContain('Task: count the open bugs');
    expect(text).toContain('Schedule: every 2 seconds');
    // 09:00:00Z is 10:00:00 in Berlin (UTC+01:00): the first run 2 s after approval, then every 2 s.
    expect(text).toContain('Next runs (counted from when it is approved): Mon 2026-11-30 10:00:02 (Europe/Berlin, UTC+01:00); Mon 2026-11-30 10:00:04 (Europe/Berlin, UTC+01:00); Mon 2026-11-30 10:00:06 (Europe/Berlin, UTC+01:00)');
    expect(text).toContain('"schedule": "every 2 seconds"');

    h.ai.enqueue({ text: 'Scheduled: Ticker, every 2 seconds.' });
    const approvalId = (prompt.args.blocks as Block[]).find((b) => b.type === 'actions')!.elements![0]!.value!;
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: approvalId, userId: 'U1', channelId: 'C1', messageTs: prompt.ts, threadTs: root });
    await h.slack.waitFor('the confirmation', () => h!.slack.posts().some((p) => p.text === 'Scheduled: Ticker, every 2 seconds.'));
    expect(runPosts(h, 'Ticker')).toEqual([]);

    await tickUntil(h, clock, () => runPosts(h!, 'Ticker').length >= 3);
    const posts = runPosts(h, 'Ticker');
    expect(posts.map((p) => p.text)).toEqual(['⏰ Ticker\ntick 1', '⏰ Ticker\ntick 2', '⏰ Ticker\ntick 3']);
    for (const p of posts) expect(p).toMatchObject({ channel: 'C1', thread_ts: root });
    // Each run was a turn as U1 with the task, for a different due time.
    const runs = h.ai.requests.filter(isRun).map(lastUserText);
    expect(runs).toHaveLength(3);
    expect(new Set(runs.map((t) => /due ([^\]]+)\]/.exec(t)?.[1])).size).toBe(3);
    expect(runs[0]).toContain('(id U1)');
    expect(runs[0]).toContain('count the open bugs');

    // Another user sees none of it and cannot cancel it.
    const list = await h.slack.sendCommand(h.target, { text: 'schedules', userId: 'U2', channelId: 'C1' });
    await h.slack.waitFor('U2 list', () => h!.slack.responses.some((r) => r.id === list.responseId));
    expect(String(h.slack.responses.find((r) => r.id === list.responseId)!.body.text)).toContain('You have no scheduled tasks');
    const mine = await h.slack.sendCommand(h.target, { text: 'schedules', userId: 'U1', channelId: 'C1' });
    await h.slack.waitFor('U1 list', () => h!.slack.responses.some((r) => r.id === mine.responseId));
    const listed = h.slack.responses.find((r) => r.id === mine.responseId)!;
    expect(listed.body.response_type).toBe('ephemeral');
    const id = /`(s[a-z0-9]{5})`/.exec(String(listed.body.text))![1]!;
    expect(String(listed.body.text)).toContain('Ticker');
    const steal = await h.slack.sendCommand(h.target, { text: `unschedule ${id}`, userId: 'U2', channelId: 'C1' });
    await h.slack.waitFor('U2 unschedule', () => h!.slack.responses.some((r) => r.id === steal.responseId));
    expect(String(h.slack.responses.find((r) => r.id === steal.responseId)!.body.text)).toContain(`You have no active scheduled task \`${id}\``);
    await tickUntil(h, clock, () => runPosts(h!, 'Ticker').length >= 4);

    const cancel = await h.slack.sendCommand(h.target, { text: `unschedule ${id}`, userId: 'U1', channelId: 'C1' });
    await h.slack.waitFor('U1 unschedule', () => h!.slack.responses.some((r) => r.id === cancel.responseId));
    expect(String(h.slack.responses.find((r) => r.id === cancel.responseId)!.body.text)).toContain(`Cancelled scheduled task \`${id}\``);
    // A barrier instead of a sleep: a second schedule keeps running while the cancelled one does not.
    await askToSchedule(h, 'U3', { task: 'other', schedule: 'every 1 seconds', name: 'Other' }, 'C2');
    await h.slack.waitFor('the second prompt', () => h!.slack.approvalPrompts({ channel: 'C2' }).length > 0);
    const second = h.slack.approvalPrompts({ channel: 'C2' })[0]!;
    h.ai.enqueue({ text: 'Scheduled Other.' });
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: (second.args.blocks as Block[]).find((b) => b.type === 'actions')!.elements![0]!.value!, userId: 'U3', channelId: 'C2', messageTs: second.ts, threadTs: second.thread_ts });
    await tickUntil(h, clock, () => runPosts(h!, 'Other').length >= 4);
    expect(runPosts(h, 'Ticker')).toHaveLength(4);
  });

  it('a restart across a due time runs the missed run once, saying it is late', async () => {
    const clock = new ManualClock(T0);
    h = await start(clock);
    h.ai.enqueue({ toolCalls: [{ id: 'c1', name: 'schedule_task', arguments: { task: 'report', schedule: 'every 10 seconds', name: 'Report' } }] });
    await h.mention('C1', 'U1', 'schedule it');
    await h.slack.waitFor('the prompt', () => promptOf(h!) !== undefined);
    const prompt = promptOf(h)!;
    h.ai.enqueue({ text: 'Done.' });
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: (prompt.args.blocks as Block[]).find((b) => b.type === 'actions')!.elements![0]!.value!, userId: 'U1', channelId: 'C1', messageTs: prompt.ts, threadTs: prompt.thread_ts });
    await h.slack.waitFor('the confirmation', () => h!.slack.posts().some((p) => p.text === 'Done.'));
    await tickUntil(h, clock, () => runPosts(h!, 'Report').length >= 1);

    // Down from just after the first run across three due times (two of them missed entirely).
    await h.restart(() => clock.advance(25 * SEC));
    await tickUntil(h, clock, () => runPosts(h!, 'Report').length >= 2, 3);
    const late = runPosts(h, 'Report')[1]!.text;
    expect(late).toMatch(/^⏰ Report \(late: this run was due 2026-11-30 10:00:30 Europe\/Berlin, while I was not running; 1 earlier run skipped: I was not running at the time\)\ntick 2$/);
    // The next due time (10:00:40) runs once, on time, and nothing repeats the missed ones.
    await tickUntil(h, clock, () => runPosts(h!, 'Report').length >= 3);
    expect(runPosts(h, 'Report').map((p) => p.text.split('\n')[0])).toEqual(['⏰ Report', late.split('\n')[0], '⏰ Report']);
  });

  it('refuses bad and too frequent schedules and the per-user limit clearly, before any prompt', async () => {
    const clock = new ManualClock(T0);
    h = await start(clock, { env: { HERMES_SCHEDULE_MIN_INTERVAL_S: '60', HERMES_MAX_SCHEDULES_PER_USER: '1' } });
    const toolResults = () => h!.ai.requests.flatMap((r) => r.messages.filter((m) => m.role === 'tool').map((m) => String(m.content)));
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ task: 't', schedule: 'every 30 seconds' }, 'schedules in seconds are not allowed here; the shortest interval is 1 minute'],
      [{ task: 't', schedule: '* * * * * *' }, 'has 6 fields; only 5-field cron expressions'],
      [{ task: 't', schedule: 'whenever you like' }, 'is not a schedule I can read'],
      [{ task: 't', schedule: '0 9 * * *', timezone: 'Mars/Olympus' }, 'is not an IANA time zone'],
    ];
    for (const [i, [args, expected]] of cases.entries()) {
      h.ai.enqueue({ toolCalls: [{ id: `bad_${i}`, name: 'schedule_task', arguments: args }] }, { text: `refused ${i}` });
      await h.mention('C1', 'U1', `schedule ${i}`);
      await h.slack.waitFor(`answer ${i}`, () => h!.slack.posts().some((p) => p.text === `refused ${i}`));
      expect(toolResults().at(-1)).toContain(expected);
    }
    expect(promptOf(h)).toBeUndefined();

    // The limit: one active schedule allowed, so a second one is refused before anyone is asked.
    h.ai.enqueue({ toolCalls: [{ id: 'ok_1', name: 'schedule_task', arguments: { task: 'a', schedule: '0 9 * * *' } }] });
    await h.mention('C1', 'U1', 'first');
    await h.slack.waitFor('prompt 1', () => promptOf(h!) !== undefined);
    const p1 = promptOf(h)!;
    h.ai.enqueue({ text: 'first done' });
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: (p1.args.blocks as Block[]).find((b) => b.type === 'actions')!.elements![0]!.value!, userId: 'U1', channelId: 'C1', messageTs: p1.ts, threadTs: p1.thread_ts });
    await h.slack.waitFor('first done', () => h!.slack.posts().some((p) => p.text === 'first done'));
    h.ai.enqueue({ toolCalls: [{ id: 'ok_2', name: 'schedule_task', arguments: { task: 'b', schedule: '0 10 * * *' } }] }, { text: 'second refused' });
    await h.mention('C3', 'U1', 'second');
    await h.slack.waitFor('second refused', () => h!.slack.posts().some((p) => p.text === 'second refused'));
    expect(h.slack.approvalPrompts({ channel: 'C3' })).toEqual([]);
    expect(toolResults().at(-1)).toContain('already has 1 active scheduled tasks, the most allowed (HERMES_MAX_SCHEDULES_PER_USER)');
    // Another user still has room.
    h.ai.enqueue({ toolCalls: [{ id: 'ok_3', name: 'schedule_task', arguments: { task: 'c', schedule: '0 11 * * *' } }] });
    await h.mention('C3', 'U2', 'mine');
    await h.slack.waitFor('prompt for U2', () => h!.slack.approvalPrompts({ channel: 'C3' }).length > 0);
  });

  it('a run in a DM posts in the DM; a gated tool inside it gets the normal prompt, the creator approves, the answer follows', async () => {
    const clock = new ManualClock(T0);
    const done: unknown[] = [];
    const risky = defineTool({
      name: 'risky_action',
      description: 'Needs a person',
      input: z.object({ target: z.string() }),
      needsApproval: true,
      sideEffects: true,
      async run(args) {
        done.push(args);
        return 'did it';
      },
    });
    h = await start(clock, { extraTools: [risky] });
    h.ai.setHandler((req) => {
      const last = req.messages.at(-1);
      if (last?.role === 'tool') return { text: 'report posted' };
      return isRun(req) ? { toolCalls: [{ name: 'risky_action', arguments: { target: 'prod' } }] } : { text: 'ok' };
    });
    h.ai.enqueue({ toolCalls: [{ id: 'c1', name: 'schedule_task', arguments: { task: 'do the risky report', schedule: 'every 5 seconds', name: 'Risky' } }] });
    await h.dm('D1', 'U1', 'every 5 seconds do the risky report');
    await h.slack.waitFor('the schedule prompt', () => promptOf(h!) !== undefined);
    const first = promptOf(h)!;
    expect(first.channel).toBe('D1');
    h.ai.enqueue({ text: 'Scheduled.' });
    const idOf = (p: { args: Record<string, unknown> }) => (p.args.blocks as Block[]).find((b) => b.type === 'actions')!.elements![0]!.value!;
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: idOf(first), userId: 'U1', channelId: 'D1', messageTs: first.ts });
    await h.slack.waitFor('the confirmation', () => h!.slack.posts().some((p) => p.text === 'Scheduled.'));

    const prompts = () => h!.slack.approvalPrompts({ channel: 'D1' });
    await tickUntil(h, clock, () => prompts().length >= 2, 10);
    const gated = prompts()[1]!;
    expect(JSON.stringify(gated.args.blocks)).toContain('risky_action');
    expect(done).toEqual([]);
    // While it waits, the next due time is skipped rather than piling up a second run.
    clock.advance(6 * SEC);
    await quiet(h);
    expect(prompts()).toHaveLength(2);
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: idOf(gated), userId: 'U1', channelId: 'D1', messageTs: gated.ts });
    await h.slack.waitFor('the run answer', () => runPosts(h!, 'Risky').length === 1);
    expect(done).toEqual([{ target: 'prod' }]);
    expect(runPosts(h, 'Risky')[0]).toMatchObject({ channel: 'D1', text: '⏰ Risky\nreport posted' });
  });
});
