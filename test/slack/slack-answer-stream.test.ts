import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import type { OutboundPort } from '../../src/basics/ports.js';
import { createOutboundClient } from '../../adapters/slack/slack-calls.js';
import { toSlackLogger } from '../../adapters/slack/slack-logger.js';
import { createSlackPort } from '../../adapters/slack/slack-port.js';
import { neutralise, splitSafe, STREAM_APPEND_MS } from '../../adapters/slack/slack-answer-stream.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';

let slack: FakeSlack;
let port: OutboundPort;

beforeEach(async () => {
  slack = await startFakeSlack();
  const log = createLogger('silent');
  const client = createOutboundClient(slack.botToken, slack.apiUrl, toSlackLogger(log), 2_000);
  port = createSlackPort({ client, log });
});
afterEach(() => slack.close());

const inThread: Conversation = { platform: 'slack', workspaceId: 'T0TEAM', channelId: 'C1', threadId: '1700000000.000100', isDm: false };
const topLevelDm: Conversation = { platform: 'slack', workspaceId: 'T0TEAM', channelId: 'D1', isDm: true };

describe('Slack answers shown while they are written', () => {
  it('streams into the request\'s thread: start, batched appends, stop, with the whole text', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1', replyTo: 'C1:1700000000.000100' });
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `);
    answer.append(words[0]!);
    await slack.waitFor('the stream starts', () => slack.callsTo('chat.startStream').length === 1);
    const start = slack.callsTo('chat.startStream')[0]!.args;
    expect(start).toMatchObject({ channel: 'C1', thread_ts: '1700000000.000100', recipient_user_id: 'U1', recipient_team_id: 'T0TEAM' });
    for (const w of words.slice(1)) {
      answer.append(w);
      await new Promise((r) => setImmediate(r));
    }
    const full = words.join('').trim();
    await answer.finish(full);
    const [stream] = slack.streams();
    expect(stream).toMatchObject({ channel: 'C1', thread_ts: '1700000000.000100', state: 'stopped', text: full });
    // Batched: far fewer calls than pieces, and appends at most every STREAM_APPEND_MS.
    // (Counted, not timed call by call: arrival times jitter on a loaded machine, starts do not.)
    const appends = slack.callsTo('chat.appendStream');
    const elapsed = slack.callsTo('chat.stopStream')[0]!.at - slack.callsTo('chat.startStream')[0]!.at;
    expect(appends.length).toBeLessThan(10);
    expect(appends.length).toBeLessThanOrEqual(Math.ceil(elapsed / STREAM_APPEND_MS) + 1);
    expect(slack.callsTo('chat.postMessage')).toHaveLength(0);
  });

  it('shows tool progress as task cards, never as answer text', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    answer.progress('running fetch_url');
    await slack.waitFor('the stream starts with the task', () => slack.streams().length === 1);
    answer.append('Found it.');
    await answer.finish('Found it.');
    const [stream] = slack.streams();
    expect(stream!.text).toBe('Found it.');
    expect(stream!.chunks).toEqual([
      { type: 'task_update', id: 'task-1', title: 'running fetch_url', status: 'in_progress' },
      { type: 'markdown_text', text: 'Found it.' },
      { type: 'task_update', id: 'task-1', title: 'running fetch_url', status: 'complete' },
    ]);
  });

  it('falls back to one message edited at most once a second when the workspace refuses streaming', async () => {
    slack.refuseStreaming('not_allowed');
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    answer.append('Hello');
    await slack.waitFor('the fallback post', () => slack.posts().length === 1);
    for (let i = 0; i < 8; i++) {
      answer.append(` part${i}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const full = `Hello${Array.from({ length: 8 }, (_, i) => ` part${i}`).join('')}`;
    await answer.finish(full);
    expect(slack.posts()).toHaveLength(1);
    expect(slack.posts()[0]).toMatchObject({ channel: 'C1', thread_ts: '1700000000.000100', text: 'Hello' });
    const updates = slack.callsTo('chat.update');
    expect(updates.at(-1)!.args.text).toBe(full);
    // Live edits at most once a second (the final edit ends the answer and is not held back).
    const live = updates.slice(0, -1);
    const elapsed = updates.at(-1)!.at - slack.callsTo('chat.postMessage')[0]!.at;
    expect(live.length).toBeLessThanOrEqual(Math.ceil(elapsed / 1000) + 1);
    expect(slack.callsTo('chat.startStream')).toHaveLength(1);
  });

  it('in a top-level DM posts and edits (there is no thread to stream into)', async () => {
    const answer = port.openAnswer!(topLevelDm, {});
    answer.append('Hi there');
    await slack.waitFor('the first post', () => slack.posts().length === 1);
    await answer.finish('Hi there, done.');
    expect(slack.callsTo('chat.startStream')).toHaveLength(0);
    expect(slack.posts()[0]).toMatchObject({ channel: 'D1', text: 'Hi there' });
    expect(slack.posts()[0]!.thread_ts).toBeUndefined();
    expect(slack.callsTo('chat.update').at(-1)!.args.text).toBe('Hi there, done.');
  });

  it('continues a very long answer in a second streamed message without losing text', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    const para = `${'x'.repeat(990)}\n\n`;
    const full = Array.from({ length: 15 }, () => para).join('').trim();
    answer.append(full);
    await answer.finish(full);
    const streams = slack.streams();
    expect(streams.length).toBe(2);
    expect(streams.map((s) => s.text).join('')).toBe(full);
    for (const s of streams) expect(s.state).toBe('stopped');
  });

  it('a code block that runs on past one streamed message is closed there and opened again in the next', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    const code = Array.from({ length: 900 }, (_, i) => `print(${i})  # line ${i}`).join('\n');
    const full = `Here is the script:\n\n\`\`\`python\n${code}\n\`\`\`\n\nRun it once.`;
    expect(full.length).toBeGreaterThan(20_000);
    answer.append(full);
    await answer.finish(full);
    const streams = slack.streams();
    expect(streams.length).toBeGreaterThanOrEqual(2);
    for (const s of streams) {
      expect(s.state).toBe('stopped');
      expect(s.text.length).toBeLessThanOrEqual(12_000);
      // Every message opens and closes its own fences.
      expect((s.text.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    expect(streams[1]!.text.startsWith('```python\n')).toBe(true);
    // Nothing lost: without the fences added at the seams, the messages read as the answer.
    const seams = streams.map((s, i) => {
      let t = s.text;
      if (i > 0) t = t.replace(/^```python\n/, '');
      if (i < streams.length - 1) t = t.replace(/\n```$/, '');
      return t;
    });
    expect(seams.join('')).toBe(full);
  });

  it('replaces the streamed text when the final answer revises it', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    answer.append('thinking out loud');
    await slack.waitFor('the stream starts', () => slack.streams().length === 1);
    await answer.finish('The answer.');
    expect(slack.streams()[0]!.state).toBe('stopped');
    expect(slack.callsTo('chat.update').at(-1)!.args).toMatchObject({ ts: slack.streams()[0]!.ts, text: 'The answer.' });
  });

  it('never lets a broadcast mention fire, even split across appends', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    answer.append('ping <');
    answer.append('!here> and @ev');
    answer.append('eryone');
    await answer.finish('ping <!here> and @everyone');
    const text = slack.streams()[0]!.text;
    expect(text).not.toContain('<!here>');
    expect(text).not.toMatch(/@everyone/);
    expect(text.replace(/\u2060/g, '')).toBe('ping <!here> and @everyone');
  });

  it('an answer that ends without text stops its stream and leaves no buttons', async () => {
    const answer = port.openAnswer!(inThread, { recipientId: 'U1' });
    answer.append('Partial');
    await slack.waitFor('the stream starts', () => slack.streams().length === 1);
    await answer.end();
    expect(slack.streams()[0]).toMatchObject({ state: 'stopped', text: 'Partial' });
    expect(answer.started).toBe(true);
  });
});

describe('broadcast-safe pieces', () => {
  it('holds a tail that may become a control sequence or a broadcast word', () => {
    expect(splitSafe('a <')).toEqual({ ready: 'a ', held: '<' });
    expect(splitSafe('a @he')).toEqual({ ready: 'a ', held: '@he' });
    expect(splitSafe('a b')).toEqual({ ready: 'a b', held: '' });
    expect(neutralise('<!channel> @here')).toBe('<\u2060!channel> @\u2060here');
  });
});
