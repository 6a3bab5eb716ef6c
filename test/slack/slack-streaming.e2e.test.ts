import { afterEach, describe, expect, it } from 'vitest';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { CONTROL_TEXT } from '../../adapters/slack/slack-answer-stream.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

/**
 * Answers shown as they are written, end to end: the real Bolt app and WebClient against the fake
 * Slack, the real openai SDK streaming from the fake model server.
 */
let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const STREAMING = { env: { HERMES_STREAMING: 'on' } };

/** Posts other than the Stop message shown under a stream while it is written. */
const answerPosts = (filter: { channel?: string; thread_ts?: string }) => h!.slack.posts(filter).filter((p) => p.text !== CONTROL_TEXT);

describe('Slack: streamed answers', () => {
  it('a channel mention is answered by a stream in its thread, with tool progress as a task card and no tool-call text', async () => {
    h = await startSlackHarness({ ...STREAMING, extraTools: [getCurrentTime] });
    const call = '<tool_call>{"name": "get_current_time", "arguments": {"timezone": "UTC"}}</tool_call>';
    h.ai.enqueue(
      { text: `Let me check the time.\n${call}`, stream: { textChunks: ['Let me ', 'check the time.\n<tool', `_call>${call.slice(11, 40)}`, call.slice(40)] } },
      { text: 'It is noon.', stream: { textChunks: ['It is ', 'noon.'] } },
    );
    const ts = await h.mention('C1', 'U1', 'what time is it?');
    await h.slack.waitFor('the stream ends', () => h!.slack.streams().some((s) => s.state === 'stopped'));
    const [stream] = h.slack.streams();
    expect(stream).toMatchObject({ channel: 'C1', thread_ts: ts, recipient_user_id: 'U1', recipient_team_id: h.slack.teamId });
    expect(stream!.text).toBe('Let me check the time.\n\nIt is noon.');
    // A quick tool may be done before the next append, so its card can arrive already complete.
    const cards = stream!.chunks.filter((c) => c.type === 'task_update');
    expect(cards.length).toBeGreaterThan(0);
    expect(new Set(cards.map((c) => c.title))).toEqual(new Set(['running get_current_time']));
    expect(cards.at(-1)!.status).toBe('complete');
    expect(answerPosts({ channel: 'C1' })).toHaveLength(0);
    // The Stop message was there while the answer was written, and is gone.
    const control = h.slack.posts({ channel: 'C1', thread_ts: ts }).find((p) => p.text === CONTROL_TEXT);
    expect(control).toBeDefined();
    await h.slack.waitFor('the Stop message removed', () => h!.slack.callsTo('chat.delete').some((c) => c.args.ts === control!.ts));
    expect(h.ai.requests[0]).toMatchObject({ stream: true });
  });

  it('falls back to a posted message edited to the whole answer when the workspace refuses streaming', async () => {
    h = await startSlackHarness(STREAMING);
    h.slack.refuseStreaming('feature_not_enabled');
    h.ai.enqueue({ text: 'A complete answer, written in pieces.', stream: { textChunks: ['A complete ', 'answer, written ', 'in pieces.'], chunkDelayMs: 30 } });
    const ts = await h.mention('C1', 'U1', 'hello');
    await h.slack.waitFor('the final edit', () => h!.slack.callsTo('chat.update').some((c) => c.args.text === 'A complete answer, written in pieces.') || h!.slack.posts().some((p) => p.text === 'A complete answer, written in pieces.'));
    expect(h.slack.posts({ channel: 'C1', thread_ts: ts })).toHaveLength(1);
    expect(h.slack.streams()).toHaveLength(0);
  });

  it('a model failure mid-answer ends the stream and says so in the thread', async () => {
    h = await startSlackHarness(STREAMING);
    h.ai.enqueue({ text: 'Half an answer', stream: { textChunks: ['Half ', 'an answer'], breakAfter: { chunks: 3, how: 'drop' } } });
    const ts = await h.mention('C1', 'U1', 'hello');
    await h.slack.waitFor('the failure message', () => answerPosts({ channel: 'C1', thread_ts: ts }).length === 1);
    expect(h.slack.streams()[0]).toMatchObject({ state: 'stopped', text: 'Half an answer' });
    expect(answerPosts({ channel: 'C1', thread_ts: ts })[0]!.text).toMatch(/model/i);
  });
});
