import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SUGGESTED_PROMPTS } from '../../src/settings/slack-file.js';
import { WORKING_STATUS } from '../../adapters/slack/assistant-threads.js';
import { WORKING_REACTION } from '../../adapters/slack/slack-port.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

/**
 * The app's assistant pane, end to end: the real Bolt app against the fake Slack. A new thread is
 * offered the configured prompts, a turn in it shows Slack's status line and clears it, and the
 * thread is titled from its first request only.
 */
let h: SlackHarness | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function configFile(yaml: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-assistant-'));
  dirs.push(dir);
  const file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, yaml);
  return file;
}

async function startThread(harness: SlackHarness, channel: string, user: string): Promise<string> {
  const ts = harness.slack.nextTs();
  const res = await harness.slack.sendEvent(harness.target, { type: 'assistant_thread_started', assistant_thread: { user_id: user, channel_id: channel, thread_ts: ts, context: {} }, ts });
  expect(res.status).toBe(200);
  await harness.slack.waitFor('the suggested prompts', () => harness.slack.callsTo('assistant.threads.setSuggestedPrompts').some((c) => c.args.thread_ts === ts));
  return ts;
}

describe('Slack: assistant threads', () => {
  it('offers the configured prompts, shows the status while it works, and titles the thread from its first request', async () => {
    const file = await configFile(['slack:', '  suggested_prompts:', '    - title: Triage', '      message: Triage the newest alerts', '    - title: Standup', '      message: Write my standup notes'].join('\n'));
    h = await startSlackHarness({ env: { HERMES_CONFIG: file } });
    const thread = await startThread(h, 'D1', 'U1');
    const [prompts] = h.slack.callsTo('assistant.threads.setSuggestedPrompts');
    expect(prompts!.args).toMatchObject({ channel_id: 'D1', thread_ts: thread, prompts: [{ title: 'Triage', message: 'Triage the newest alerts' }, { title: 'Standup', message: 'Write my standup notes' }] });

    h.ai.enqueue({ text: 'Here is the triage.' }, { text: 'And the standup.' });
    await h.dm('D1', 'U1', 'Triage the newest alerts from the payments service\nand more detail here', { threadTs: thread });
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'D1', thread_ts: thread }).length === 1);
    await h.core.gateway.idle();
    await h.slack.waitFor('the status cleared', () => h!.slack.callsTo('assistant.threads.setStatus').length === 2);
    const status = h.slack.callsTo('assistant.threads.setStatus');
    expect(status.map((c) => [c.args.channel_id, c.args.thread_ts, c.args.status])).toEqual([['D1', thread, WORKING_STATUS], ['D1', thread, '']]);
    const answerAt = h.slack.calls.findIndex((c) => c.method === 'chat.postMessage');
    expect(h.slack.calls.indexOf(status[0]!)).toBeLessThan(answerAt);
    // The status line takes the reaction's place in the pane.
    expect(h.slack.callsTo('reactions.add').filter((c) => c.args.name === WORKING_REACTION)).toEqual([]);
    expect(h.slack.callsTo('assistant.threads.setTitle').map((c) => c.args)).toEqual([expect.objectContaining({ channel_id: 'D1', thread_ts: thread, title: 'Triage the newest alerts from the payments service' })]);

    // A later request in the same thread keeps the title.
    await h.dm('D1', 'U1', 'now the standup', { threadTs: thread });
    await h.slack.waitFor('the second answer', () => h!.slack.posts({ channel: 'D1', thread_ts: thread }).length === 2);
    await h.core.gateway.idle();
    expect(h.slack.callsTo('assistant.threads.setTitle')).toHaveLength(1);
  });

  it('with streaming on, the answer is streamed into the assistant thread after the status is set, and the status is cleared', async () => {
    h = await startSlackHarness({ env: { HERMES_STREAMING: 'on' } });
    const thread = await startThread(h, 'D5', 'U1');
    h.ai.enqueue({ text: 'Streamed into the pane.', stream: { textChunks: ['Streamed ', 'into the pane.'], chunkDelayMs: 50 } });
    await h.dm('D5', 'U1', 'What can you do?', { threadTs: thread });
    await h.slack.waitFor('the stream ends', () => h!.slack.streams().some((s) => s.state === 'stopped'));
    await h.core.gateway.idle();
    await h.slack.waitFor('the status cleared', () => h!.slack.callsTo('assistant.threads.setStatus').length === 2);
    const [stream] = h.slack.streams();
    expect(stream).toMatchObject({ channel: 'D5', thread_ts: thread, text: 'Streamed into the pane.' });
    const status = h.slack.callsTo('assistant.threads.setStatus');
    expect(status.map((c) => c.args.status)).toEqual([WORKING_STATUS, '']);
    expect(h.slack.calls.indexOf(status[0]!)).toBeLessThan(h.slack.calls.indexOf(h.slack.callsTo('chat.startStream')[0]!));
    expect(h.slack.callsTo('assistant.threads.setTitle').map((c) => c.args.title)).toEqual(['What can you do?']);
  });

  it('a long turn sets its status again before Slack\'s two-minute timeout drops it, and stops once the turn ends', async () => {
    // Renewed every 150 ms here (90 s in production); the model takes 1 s to answer.
    h = await startSlackHarness({ statusRenewMs: 150 });
    const thread = await startThread(h, 'D6', 'U1');
    h.ai.enqueue({ text: 'Took a while.', delayMs: 1_000 });
    await h.dm('D6', 'U1', 'a long task', { threadTs: thread });
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'D6', thread_ts: thread }).length === 1, 20_000);
    await h.core.gateway.idle();
    await h.slack.waitFor('the status cleared', () => h!.slack.callsTo('assistant.threads.setStatus').some((c) => c.args.status === ''));
    const status = h.slack.callsTo('assistant.threads.setStatus');
    const clearedAt = status.findIndex((c) => c.args.status === '');
    expect(clearedAt).toBe(status.length - 1);
    expect(status.slice(0, clearedAt).every((c) => c.args.status === WORKING_STATUS && c.args.thread_ts === thread)).toBe(true);
    // Set once, then renewed while the model worked.
    expect(clearedAt).toBeGreaterThanOrEqual(3);
  });

  it('uses the default prompts without config, and a DM thread the pane never announced keeps the reaction and gets no title', async () => {
    h = await startSlackHarness();
    await startThread(h, 'D2', 'U1');
    expect(h.slack.callsTo('assistant.threads.setSuggestedPrompts')[0]!.args.prompts).toEqual(DEFAULT_SUGGESTED_PROMPTS.map((p) => ({ ...p })));
    h.ai.enqueue({ text: 'plain thread answer' });
    const top = await h.dm('D3', 'U1', 'first');
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'D3' }).length === 1);
    h.ai.enqueue({ text: 'in a thread' });
    await h.dm('D3', 'U1', 'a reply in a thread', { threadTs: top });
    await h.slack.waitFor('the thread answer', () => h!.slack.posts({ channel: 'D3', thread_ts: top }).length === 1);
    await h.core.gateway.idle();
    expect(h.slack.callsTo('assistant.threads.setStatus')).toEqual([]);
    expect(h.slack.callsTo('assistant.threads.setTitle')).toEqual([]);
    expect(h.slack.callsTo('reactions.add').some((c) => c.args.name === WORKING_REACTION)).toBe(true);
  });

  it('a workspace that refuses the assistant methods still gets its answer', async () => {
    h = await startSlackHarness();
    h.slack.failNext('assistant.threads.setSuggestedPrompts', 'missing_scope');
    const thread = await startThread(h, 'D4', 'U1');
    h.slack.failNext('assistant.threads.setStatus', 'missing_scope');
    h.slack.failNext('assistant.threads.setTitle', 'missing_scope');
    h.ai.enqueue({ text: 'still answered' });
    await h.dm('D4', 'U1', 'hello', { threadTs: thread });
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'D4', thread_ts: thread }).length === 1);
    expect(h.slack.posts({ channel: 'D4', thread_ts: thread })[0]!.text).toBe('still answered');
  });
});
