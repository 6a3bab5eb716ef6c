import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FEEDBACK_ACTION, STOP_ACTION } from '../../adapters/slack/answer-buttons.js';
import { CONTROL_TEXT } from '../../adapters/slack/slack-answer-stream.js';
import { createFeedbackStore } from '../../src/state/feedback/feedback-store.js';
import { main as evalMain } from '../../src/operations/eval/eval-cli.js';
import { loadCases } from '../../src/operations/eval/case-schema.js';
import { main as statsMain } from '../../src/operations/stats/stats-cli.js';
import { createCore } from '../../src/app/app.js';
import { builtinTools } from '../../tools/index.js';
import { delegateTool } from '../../tools/delegate.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import { agentOf } from '../subagents/subagent-helpers.js';
import { startSandbox, type SandboxFixture } from '../sandbox/sandbox-helper.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

/**
 * The Stop button and the feedback buttons, end to end: the real Bolt app against the fake Slack,
 * the real openai SDK streaming slowly from the fake model server, real SQLite for the votes.
 */
let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

let fx: SandboxFixture | undefined;
beforeAll(async () => {
  fx = await startSandbox();
});
afterAll(async () => {
  await fx?.close();
});

const STREAMING = { env: { HERMES_STREAMING: 'on' } };
/** The contract: a click on Stop ends the turn within 2 s. */
const STOP_WITHIN_MS = 2_000;

/** A reply written slowly: 40 words, 250 ms apart (10 s in all). */
function slowReply() {
  const words = Array.from({ length: 40 }, (_, i) => `word${i} `);
  return { text: words.join(''), stream: { textChunks: words, chunkDelayMs: 250 } };
}

type Block = { type: string; elements?: Array<Record<string, unknown>> };

/** The Stop message under a streamed answer and its button's value. */
function stopControl(slack: SlackHarness['slack']): { ts: string; value: string; thread_ts?: string } | undefined {
  for (const p of slack.posts()) {
    const blocks = (p.args.blocks ?? []) as Block[];
    const button = blocks.flatMap((b) => b.elements ?? []).find((e) => e.action_id === STOP_ACTION);
    if (button) return { ts: p.ts, value: String(button.value), thread_ts: p.thread_ts };
  }
  return undefined;
}

function ephemeralsTo(slack: SlackHarness['slack'], user: string): string[] {
  return slack.callsTo('chat.postEphemeral').filter((c) => c.args.user === user).map((c) => String(c.args.text));
}

describe('Slack: Stop button', () => {
  it('the requester stops a streaming answer within 2 s; the model call is aborted and the button goes; someone else is refused privately', async () => {
    h = await startSlackHarness(STREAMING);
    h.ai.enqueue(slowReply());
    const ts = await h.mention('C1', 'UASKER', 'write a lot');
    await h.slack.waitFor('the Stop button', () => stopControl(h!.slack) !== undefined);
    const control = stopControl(h.slack)!;
    expect(control.thread_ts).toBe(ts);
    expect(h.slack.posts().find((p) => p.ts === control.ts)!.text).toBe(CONTROL_TEXT);

    // Someone else: refused, privately, and the answer goes on.
    const other = await h.slack.sendClick(h.target, { actionId: STOP_ACTION, value: control.value, userId: 'UOTHER', channelId: 'C1', messageTs: control.ts, threadTs: ts });
    expect(other.status).toBe(200);
    await h.slack.waitFor('the refusal', () => ephemeralsTo(h!.slack, 'UOTHER').length > 0);
    expect(ephemeralsTo(h.slack, 'UOTHER')[0]).toMatch(/Only <@UASKER> \(who asked\) or an admin can stop this task/);
    expect(h.slack.streams()[0]!.state).toBe('streaming');

    const clicked = Date.now();
    await h.slack.sendClick(h.target, { actionId: STOP_ACTION, value: control.value, userId: 'UASKER', channelId: 'C1', messageTs: control.ts, threadTs: ts });
    await h.slack.waitFor('the stream stopped and the Stop message removed', () => h!.slack.streams()[0]!.state === 'stopped' && h!.slack.callsTo('chat.delete').some((c) => c.args.ts === control.ts));
    const tookMs = Date.now() - clicked;
    expect(tookMs).toBeLessThanOrEqual(STOP_WITHIN_MS);
    await h.slack.waitFor('the model call abandoned', () => h!.ai.abandoned === 1);

    const stream = h.slack.streams()[0]!;
    expect(stream.text).toMatch(/^word0\b/);
    expect(stream.text).not.toContain('word39');
    expect(stream.text.trimEnd().endsWith('_Stopped by <@UASKER>._')).toBe(true);
    // No feedback on an answer that never finished; nothing more was asked of the model.
    expect(stream.blocks ?? []).toEqual([]);
    expect(h.ai.requests).toHaveLength(1);
    expect(ephemeralsTo(h.slack, 'UASKER')).toEqual([]);

    // The next message gets a normal answer.
    h.ai.enqueue({ text: 'Fresh answer.' });
    await h.mention('C1', 'UASKER', 'again');
    await h.slack.waitFor('the second answer', () => h!.slack.streams().some((s) => s.text === 'Fresh answer.' && s.state === 'stopped'));
  });

  it('an admin may stop someone else’s task; a click after the turn ended says so', async () => {
    h = await startSlackHarness({ env: { HERMES_STREAMING: 'on', HERMES_ADMINS: 'slack:UADMIN' } });
    h.ai.enqueue(slowReply());
    const ts = await h.mention('C1', 'UASKER', 'write a lot');
    await h.slack.waitFor('the Stop button', () => stopControl(h!.slack) !== undefined);
    const control = stopControl(h.slack)!;
    await h.slack.sendClick(h.target, { actionId: STOP_ACTION, value: control.value, userId: 'UADMIN', channelId: 'C1', messageTs: control.ts, threadTs: ts });
    await h.slack.waitFor('the stream stopped', () => h!.slack.streams()[0]!.state === 'stopped');
    expect(h.slack.streams()[0]!.text).toContain('_Stopped by <@UADMIN>._');

    await h.slack.sendClick(h.target, { actionId: STOP_ACTION, value: control.value, userId: 'UASKER', channelId: 'C1', messageTs: control.ts, threadTs: ts });
    await h.slack.waitFor('the late-click answer', () => ephemeralsTo(h!.slack, 'UASKER').length > 0);
    expect(ephemeralsTo(h.slack, 'UASKER')[0]).toBe('This task has already finished.');
  });

  it('Stop kills a running run_code program and the turn ends within 2 s', async (ctx) => {
    if (!fx?.sandbox) return ctx.skip();
    const runCode = builtinTools({ sandbox: fx.sandbox, code: { defaultTimeoutMs: 60_000, memoryMb: 256 } }).filter((t) => t.name === 'run_code');
    h = await startSlackHarness({ env: { HERMES_STREAMING: 'on', HERMES_WORKSPACE_DIR: path.join(fx.dir, 'stop') }, extraTools: runCode });
    h.ai.enqueue(
      { text: 'Running it now.', toolCalls: [{ id: 'c1', name: 'run_code', arguments: { language: 'bash', code: 'echo started; sleep 30; echo never', timeout_s: 50 } }] },
      { text: 'unused' },
    );
    const ts = await h.mention('C1', 'UASKER', 'run the long job');
    await h.slack.waitFor('the Stop button and the tool running', () => stopControl(h!.slack) !== undefined && h!.slack.streams()[0]?.chunks.some((c) => c.type === 'task_update') === true, 10_000);
    const control = stopControl(h.slack)!;
    const clicked = Date.now();
    await h.slack.sendClick(h.target, { actionId: STOP_ACTION, value: control.value, userId: 'UASKER', channelId: 'C1', messageTs: control.ts, threadTs: ts });
    await h.slack.waitFor('the stream stopped', () => h!.slack.streams()[0]!.state === 'stopped');
    expect(Date.now() - clicked).toBeLessThanOrEqual(STOP_WITHIN_MS);
    // The program was killed, not waited for: the model was never asked again with its result.
    expect(h.ai.requests).toHaveLength(1);
  });
});

describe('Slack: Stop reaches sub-agents', () => {
  it('Stop ends a turn whose sub-agent is waiting on the model within 2 s: the sub-agent\'s request is given up and nothing more is asked', async () => {
    h = await startSlackHarness({ ...STREAMING, extraTools: [delegateTool(resolveProfiles({ coder: false, writer: false }))!] });
    const main = [{ toolCalls: [{ id: 'slowjob', name: 'delegate', arguments: { agent: 'researcher', task: 'Research something slow' } }] }];
    h.ai.setHandler((req) => (agentOf(req) ? { hang: true } : (main.shift() ?? { text: 'must not be asked again' })));
    const ts = await h.mention('C1', 'UASKER', 'research it with your researcher');
    await h.slack.waitFor('the Stop button and the sub-agent asking the model', () => stopControl(h!.slack) !== undefined && h!.ai.requests.some((r) => agentOf(r)) && h!.ai.inFlight === 1, 10_000);
    const control = stopControl(h.slack)!;
    const clicked = Date.now();
    await h.slack.sendClick(h.target, { actionId: STOP_ACTION, value: control.value, userId: 'UASKER', channelId: 'C1', messageTs: control.ts, threadTs: ts });
    await h.slack.waitFor('the stream stopped', () => h!.slack.streams()[0]!.state === 'stopped');
    expect(Date.now() - clicked).toBeLessThanOrEqual(STOP_WITHIN_MS);
    await h.slack.waitFor('the sub-agent\'s request given up', () => h!.ai.abandoned === 1 && h!.ai.inFlight === 0);
    await h.core.gateway.idle();
    // The main agent was never asked again with the sub-agent's result.
    expect(h.ai.requests).toHaveLength(2);
    expect(h.slack.streams()[0]!.text).toContain('_Stopped by <@UASKER>._');
  });
});

describe('Slack: /hermes stop', () => {
  it('follows the same rule as the button: someone else is refused, the requester stops a task running in the channel', async () => {
    h = await startSlackHarness(STREAMING);
    h.ai.enqueue(slowReply());
    await h.slack.sendCommand(h.target, { text: 'write a lot', userId: 'UASKER', channelId: 'C5' });
    // No thread here: the answer is one message edited as it is written, Stop on the message itself.
    await h.slack.waitFor('the answer being written, with Stop', () => stopControl(h!.slack) !== undefined);
    expect(h.slack.posts().find((p) => p.ts === stopControl(h!.slack)!.ts)!.text).toMatch(/^word0/);
    const other = await h.slack.sendCommand(h.target, { text: 'stop', userId: 'UOTHER', channelId: 'C5' });
    await h.slack.waitFor('the refusal', () => h!.slack.responses.some((r) => r.id === other.responseId));
    expect(String(h.slack.responses.find((r) => r.id === other.responseId)!.body.text)).toMatch(/Only <@UASKER> \(who asked\) or an admin can stop this task/);
    const own = await h.slack.sendCommand(h.target, { text: 'stop', userId: 'UASKER', channelId: 'C5' });
    await h.slack.waitFor('the confirmation', () => h!.slack.responses.some((r) => r.id === own.responseId));
    expect(String(h.slack.responses.find((r) => r.id === own.responseId)!.body.text)).toBe('OK: stopped the running task.');
    const answerTs = stopControl(h.slack)!.ts;
    await h.slack.waitFor('the answer edited to its stopped form', () =>
      h!.slack.callsTo('chat.update').some((c) => c.args.ts === answerTs && String(c.args.text).endsWith('_Stopped by <@UASKER>._') && (c.args.blocks as unknown[]).length === 0),
    );
  });
});

describe('Slack: feedback buttons', () => {
  it('the final streamed message carries thumbs; a vote is stored with turn and voter, and a changed vote replaces it', async () => {
    h = await startSlackHarness(STREAMING);
    h.ai.enqueue({ text: 'Paris is the capital of France.' });
    const ts = await h.mention('C1', 'UASKER', 'capital of France?');
    await h.slack.waitFor('the stream ends', () => h!.slack.streams()[0]?.state === 'stopped');
    const blocks = (h.slack.streams()[0]!.blocks ?? []) as Block[];
    const fb = blocks.find((b) => b.type === 'context_actions')?.elements?.[0] as { type: string; action_id: string; positive_button: { value: string }; negative_button: { value: string } };
    expect(fb).toMatchObject({ type: 'feedback_buttons', action_id: FEEDBACK_ACTION });
    const down = fb.negative_button.value;
    const turnId = down.split('|')[1]!;
    const messageTs = h.slack.streams()[0]!.ts;

    await h.slack.sendClick(h.target, { actionId: FEEDBACK_ACTION, actionType: 'feedback_buttons', value: down, userId: 'UOTHER', channelId: 'C1', messageTs, threadTs: ts });
    await h.slack.waitFor('the thanks', () => ephemeralsTo(h!.slack, 'UOTHER').length === 1);
    expect(ephemeralsTo(h.slack, 'UOTHER')[0]).toMatch(/Thanks for the 👎/);
    const store = createFeedbackStore(h.core.database.db);
    expect(await store.votesFor(turnId)).toMatchObject([{ turnId, voter: `slack:${h.slack.teamId}:UOTHER`, vote: 'down', platform: 'slack' }]);

    await h.slack.sendClick(h.target, { actionId: FEEDBACK_ACTION, actionType: 'feedback_buttons', value: fb.positive_button.value, userId: 'UOTHER', channelId: 'C1', messageTs, threadTs: ts });
    await h.slack.waitFor('the change', () => ephemeralsTo(h!.slack, 'UOTHER').length === 2);
    expect(ephemeralsTo(h.slack, 'UOTHER')[1]).toBe('Changed your vote on this answer to 👍.');
    expect((await store.votesFor(turnId)).map((v) => v.vote)).toEqual(['up']);
  });

  it('a 👎 clicked in Slack shows in npm run stats and becomes an eval case with npm run eval -- --from-feedback', async () => {
    h = await startSlackHarness(STREAMING);
    h.ai.enqueue({ text: 'The capital of Australia is Sydney.' });
    const ts = await h.mention('C1', 'UASKER', 'what is the capital of Australia?');
    await h.slack.waitFor('the stream ends', () => h!.slack.streams()[0]?.state === 'stopped');
    const blocks = (h.slack.streams()[0]!.blocks ?? []) as Block[];
    const fb = blocks.find((b) => b.type === 'context_actions')?.elements?.[0] as { negative_button: { value: string } };
    await h.slack.sendClick(h.target, { actionId: FEEDBACK_ACTION, actionType: 'feedback_buttons', value: fb.negative_button.value, userId: 'UOTHER', channelId: 'C1', messageTs: h.slack.streams()[0]!.ts, threadTs: ts });
    await h.slack.waitFor('the thanks', () => ephemeralsTo(h!.slack, 'UOTHER').length === 1);
    await h.core.gateway.idle();

    // The CLIs read the data dir as an operator runs them, while the bot is down (one SQLite owner).
    const dir = h.config.dataDir;
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l), env: { HERMES_DATA_DIR: dir }, cwd: dir, now: () => Date.now() };
    let statsCode: number | undefined;
    let evalCode: number | undefined;
    await h.restart(async () => {
      statsCode = await statsMain([], io);
      evalCode = await evalMain(['--from-feedback', '--since', '1d'], io, { tools: builtinTools, createCore });
    });
    expect(statsCode).toBe(0);
    expect(out.join('\n')).toContain('Feedback: 0 up, 1 down');
    expect(evalCode).toBe(0);
    expect(err.join('\n')).toBe('');
    const cases = await loadCases(path.join(dir, 'evals'));
    expect(cases).toHaveLength(1);
    expect(cases[0]!.messages.join(' ')).toContain('what is the capital of Australia?');
    expect(cases[0]!.expect.answer).toMatchObject({ none: ['The capital of Australia is Sydney.'] });
  });

  it('an answer posted whole (streaming off) carries the thumbs on its last message', async () => {
    h = await startSlackHarness();
    h.ai.enqueue({ text: 'A plain answer.' });
    const ts = await h.mention('C1', 'UASKER', 'hi');
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'C1', thread_ts: ts }).length === 1);
    const blocks = (h.slack.posts({ channel: 'C1', thread_ts: ts })[0]!.args.blocks ?? []) as Block[];
    expect(blocks[0]).toMatchObject({ type: 'section', text: { type: 'mrkdwn', text: 'A plain answer.' } });
    expect(blocks.at(-1)).toMatchObject({ type: 'context_actions', elements: [{ type: 'feedback_buttons' }] });
  });
});
