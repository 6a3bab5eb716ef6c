import { afterEach, describe, expect, it } from 'vitest';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { CONTROL_TEXT, SLACK_EDIT_MS } from '../../adapters/slack/slack-answer-stream.js';
import { STOP_ACTION } from '../../adapters/slack/answer-buttons.js';
import { SLACK_CHUNK_CHARS } from '../../adapters/slack/chunk.js';
import { stripPartMarker } from '../../src/basics/text/chunk-markdown.js';
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

  it('an answer the loop withdraws (a figure no tool gave) is replaced by the final one, which carries the feedback buttons', async () => {
    // The grounding check applies when tools were offered and none was called.
    h = await startSlackHarness({ ...STREAMING, extraTools: [getCurrentTime] });
    const first = 'Bitcoin is at $97,412.50 right now.';
    const second = 'From memory, and possibly out of date: I have no live price tool here.';
    h.ai.enqueue({ text: first, stream: { textChunks: ['Bitcoin is at ', '$97,412.50 right now.'], chunkDelayMs: 400 } }, { text: second });
    const ts = await h.mention('C1', 'U1', 'what is bitcoin at?');
    await h.slack.waitFor('the stream stopped', () => h!.slack.streams().some((s) => s.state === 'stopped'), 20_000);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(2);
    const [stream] = h.slack.streams();
    expect(stream!.thread_ts).toBe(ts);
    // The streamed message now reads as the final answer, with the thumbs; nothing else was posted.
    const last = h.slack.callsTo('chat.update').filter((c) => c.args.ts === stream!.ts).at(-1);
    expect(last?.args.text).toBe(second);
    expect(JSON.stringify(last?.args.blocks ?? [])).toContain('feedback_buttons');
    expect(JSON.stringify(last?.args.blocks ?? [])).not.toContain('97,412');
    expect(answerPosts({ channel: 'C1', thread_ts: ts })).toEqual([]);
  });

  it('the fallback edits its message at most once a second while the answer is written', async () => {
    h = await startSlackHarness(STREAMING);
    h.slack.refuseStreaming('not_allowed');
    const words = Array.from({ length: 24 }, (_, i) => `piece${i} `);
    const text = words.join('').trimEnd();
    h.ai.enqueue({ text, stream: { textChunks: [...words.slice(0, -1), words.at(-1)!.trimEnd()], chunkDelayMs: 150 } });
    const ts = await h.mention('C1', 'U1', 'write it slowly');
    await h.slack.waitFor('the final edit', () => h!.slack.callsTo('chat.update').some((c) => c.args.text === text), 20_000);
    await h.core.gateway.idle();
    const [post] = h.slack.posts({ channel: 'C1', thread_ts: ts });
    expect(post!.text).toMatch(/^piece0/);
    const updates = h.slack.callsTo('chat.update').filter((c) => c.args.ts === post!.ts);
    const final = updates.find((c) => c.args.text === text)!;
    // Edits while written (everything before the final one) keep a second apart, start to start:
    // counted over the span, since arrival times jitter by a few ms on a loaded machine.
    const live = updates.filter((c) => c.at < final.at);
    const span = final.at - h.slack.callsTo('chat.postMessage').find((c) => c.ts === post!.ts)!.at;
    expect(span).toBeGreaterThan(2_000);
    expect(live.length).toBeGreaterThan(0);
    expect(live.length).toBeLessThanOrEqual(Math.floor(span / SLACK_EDIT_MS) + 1);
  });

  it('a top-level DM is answered by one message posted and edited (no thread to stream into), with Stop while written', async () => {
    h = await startSlackHarness(STREAMING);
    h.ai.enqueue({ text: 'Hello there, here is the whole answer.', stream: { textChunks: ['Hello there,', ' here is', ' the whole answer.'], chunkDelayMs: 300 } });
    await h.dm('D1', 'U1', 'hi');
    await h.slack.waitFor('the final edit', () => h!.slack.callsTo('chat.update').some((c) => c.args.text === 'Hello there, here is the whole answer.'), 20_000);
    await h.core.gateway.idle();
    expect(h.slack.callsTo('chat.startStream')).toEqual([]);
    const posts = h.slack.posts({ channel: 'D1' });
    expect(posts).toHaveLength(1);
    expect(posts[0]!.thread_ts).toBeUndefined();
    expect(posts[0]!.text).toBe('Hello there,');
    // The message carries Stop while it is written, and feedback (not Stop) once final.
    expect(JSON.stringify(posts[0]!.args.blocks)).toContain(STOP_ACTION);
    const last = h.slack.callsTo('chat.update').at(-1)!;
    expect(last.args.ts).toBe(posts[0]!.ts);
    expect(JSON.stringify(last.args.blocks)).not.toContain(STOP_ACTION);
    expect(JSON.stringify(last.args.blocks)).toContain('feedback_buttons');
  });

  it('JSON mode streams only the final answer: the action JSON and the answer\'s JSON wrapper never show', async () => {
    h = await startSlackHarness({ env: { HERMES_STREAMING: 'on', HERMES_TOOL_MODE: 'json' }, extraTools: [getCurrentTime] });
    const action = '{"thought": "I need the time", "action": "get_current_time", "action_input": {"timezone": "UTC"}}';
    const final = '{"thought": "I have it", "final_answer": "It is noon in UTC."}';
    const pieces = (t: string) => [t.slice(0, 9), t.slice(9, 30), t.slice(30, 61), t.slice(61)];
    h.ai.enqueue({ text: action, stream: { textChunks: pieces(action), chunkDelayMs: 20 } }, { text: final, stream: { textChunks: pieces(final), chunkDelayMs: 20 } });
    const ts = await h.mention('C1', 'U1', 'what time is it?');
    await h.slack.waitFor('the stream ends', () => h!.slack.streams().some((s) => s.state === 'stopped'));
    await h.core.gateway.idle();
    const [stream] = h.slack.streams();
    expect(stream).toMatchObject({ thread_ts: ts, text: 'It is noon in UTC.' });
    const sent = JSON.stringify(h.slack.calls.filter((c) => c.method.startsWith('chat.')).map((c) => c.args));
    expect(sent).not.toMatch(/"thought|final_answer|action_input|I need the time/);
    expect(answerPosts({ channel: 'C1' })).toHaveLength(0);
    expect(h.ai.requests.map((r) => r.stream)).toEqual([true, true]);
  });

  it('a tool call written as bare JSON is held back and never shown', async () => {
    h = await startSlackHarness({ ...STREAMING, extraTools: [getCurrentTime] });
    const call = '{"name": "get_current_time", "arguments": {"timezone": "UTC"}}';
    h.ai.enqueue({ text: call, stream: { textChunks: [call.slice(0, 1), call.slice(1, 20), call.slice(20)], chunkDelayMs: 30 } }, { text: 'It is noon.' });
    await h.mention('C1', 'U1', 'what time is it?');
    await h.slack.waitFor('the stream ends', () => h!.slack.streams().some((s) => s.state === 'stopped'));
    await h.core.gateway.idle();
    expect(h.slack.streams().map((s) => s.text)).toEqual(['It is noon.']);
    expect(JSON.stringify(h.slack.calls.map((c) => c.args))).not.toMatch(/"arguments|\\"timezone/);
    expect(h.ai.requests).toHaveLength(2);
  });

  it('a very long answer continues in further streamed messages, each within Slack\'s limit, without losing a word', async () => {
    h = await startSlackHarness(STREAMING);
    const { text, words, textChunks } = longAnswer(2_600);
    h.ai.enqueue({ text, stream: { textChunks, chunkDelayMs: 20 } });
    const ts = await h.mention('C1', 'U1', 'write a very long one');
    await h.slack.waitFor('every stream stopped', () => h!.slack.streams().length > 1 && h!.slack.streams().every((s) => s.state === 'stopped'), 30_000);
    await h.core.gateway.idle();
    const streams = h.slack.streams();
    expect(streams.every((s) => s.thread_ts === ts)).toBe(true);
    // Slack takes at most 12,000 characters of markdown_text in one call (the fake refuses more).
    for (const c of h.slack.calls.filter((c) => c.method.endsWith('Stream'))) expect(String(c.args.markdown_text ?? '').length).toBeLessThanOrEqual(12_000);
    expect(streams.map((s) => s.text).join('').split(/\s+/)).toEqual(words);
  });

  it('a long answer in the fallback form is split into messages within Slack\'s limits, without losing a word', async () => {
    h = await startSlackHarness(STREAMING);
    h.slack.refuseStreaming('not_allowed');
    const { text, words, textChunks } = longAnswer(1_800);
    h.ai.enqueue({ text, stream: { textChunks, chunkDelayMs: 60 } });
    const ts = await h.mention('C1', 'U1', 'write a long one');
    await h.slack.waitFor('the last word shown', () => h!.slack.calls.some((c) => (c.method === 'chat.update' || c.method === 'chat.postMessage') && String(c.args.text).includes(words.at(-1)!)), 30_000);
    await h.core.gateway.idle();
    expect(h.slack.calls.filter((c) => c.refused)).toEqual([]);
    const deleted = new Set(h.slack.callsTo('chat.delete').map((c) => String(c.args.ts)));
    const finalText = new Map<string, string>();
    for (const c of h.slack.calls) {
      if (c.method === 'chat.postMessage' && c.args.thread_ts === ts && c.ts) finalText.set(c.ts, String(c.args.text));
      if (c.method === 'chat.update' && finalText.has(String(c.args.ts))) finalText.set(String(c.args.ts), String(c.args.text));
    }
    const parts = [...finalText.entries()].filter(([t]) => !deleted.has(t)).map(([, t]) => t);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(SLACK_CHUNK_CHARS);
    expect(parts.map(stripPartMarker).join(' ').split(/\s+/)).toEqual(words);
  });
});

/** An answer of `n` words in paragraphs, as a model would stream it in 20 pieces. */
function longAnswer(n: number): { text: string; words: string[]; textChunks: string[] } {
  const words = Array.from({ length: n }, (_, i) => `word${i}`);
  const text = words.map((w, i) => (i % 60 === 59 ? `${w}\n\n` : `${w} `)).join('').trimEnd();
  const per = Math.ceil(text.length / 20);
  const textChunks = Array.from({ length: 20 }, (_, i) => text.slice(i * per, (i + 1) * per)).filter((c) => c !== '');
  return { text, words, textChunks };
}
