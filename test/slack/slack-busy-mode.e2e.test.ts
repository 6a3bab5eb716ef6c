import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { getCurrentTime } from '../../tools/get-current-time.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

/**
 * A message that arrives while its thread's turn runs (HERMES_BUSY_MODE), end to end: the real
 * Bolt app against the fake Slack, the real openai SDK against the fake model. The first model
 * call is held open until the second message is durably accepted, so "while the turn runs" is an
 * awaited fact, not a race.
 */
let h: SlackHarness | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function configFile(yaml: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-busy-'));
  dirs.push(dir);
  const file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, yaml);
  return file;
}

const CALL_TOOL = { toolCalls: [{ name: 'get_current_time', arguments: { timezone: 'UTC' } }] };

function held(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((r) => (release = r));
  return { wait, release };
}

const userTexts = (req: ChatCompletionRequestBody | undefined): string[] =>
  (req?.messages ?? []).filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

/** Mentions the bot, waits for its first model call (held by the test), and sends a reply in the thread that the gateway has durably accepted. */
async function secondMessageWhileBusy(harness: SlackHarness, channel = 'C1'): Promise<{ ts: string; steerTs: string }> {
  const before = harness.ai.requests.length;
  const ts = await harness.mention(channel, 'U1', 'look up the time and tell me');
  await harness.slack.waitFor('the first model call', () => harness.ai.requests.length === before + 1);
  const steerTs = await harness.say(channel, 'U2', 'and say it in French please', { threadTs: ts });
  await workRowExists(harness, `msg:slack:${channel}:${steerTs}`);
  return { ts, steerTs };
}

async function workRowExists(harness: SlackHarness, id: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await harness.core.database.db.selectFrom('hermes_work').select('id').where('id', '=', id).executeTakeFirst())) {
    if (Date.now() > deadline) throw new Error(`work row ${id} never appeared`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Slack: a message while the thread\'s turn runs', () => {
  it('steer (default): folded into the running turn before its next model call, marked with eyes, answered once', async () => {
    h = await startSlackHarness({ extraTools: [getCurrentTime] });
    const first = held();
    h.ai.setHandler(async (_req, i) => (i === 0 ? (await first.wait, CALL_TOOL) : { text: 'Il est midi.' }));
    const { ts, steerTs } = await secondMessageWhileBusy(h);
    first.release();
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'C1', thread_ts: ts }).length > 0);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(2);
    expect(userTexts(h.ai.requests[0]).some((t) => t.includes('say it in French'))).toBe(false);
    expect(userTexts(h.ai.requests[1]).at(-1)).toMatch(/^\[from .*\(id U2\)\] and say it in French please$/);
    expect(h.slack.posts({ channel: 'C1', thread_ts: ts }).map((p) => p.text)).toEqual(['Il est midi.']);
    expect(h.slack.callsTo('reactions.add').filter((c) => c.args.name === 'eyes').map((c) => c.args)).toEqual([expect.objectContaining({ channel: 'C1', timestamp: steerTs })]);
    // The steering message's own work row ended with the turn that answered it.
    expect(await h.core.database.db.selectFrom('hermes_work').select('id').execute()).toEqual([]);
  });

  it('queue: the message waits and gets its own turn', async () => {
    h = await startSlackHarness({ extraTools: [getCurrentTime], env: { HERMES_BUSY_MODE: 'queue' } });
    const first = held();
    h.ai.setHandler(async (_req, i) => (i === 0 ? (await first.wait, CALL_TOOL) : i === 1 ? { text: 'It is noon.' } : { text: 'Il est midi.' }));
    const { ts } = await secondMessageWhileBusy(h);
    first.release();
    await h.slack.waitFor('two answers', () => h!.slack.posts({ channel: 'C1', thread_ts: ts }).length === 2);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(3);
    expect(userTexts(h.ai.requests[1]).some((t) => t.includes('say it in French'))).toBe(false);
    expect(userTexts(h.ai.requests[2]).at(-1)).toMatch(/and say it in French please$/);
    expect(h.slack.posts({ channel: 'C1', thread_ts: ts }).map((p) => p.text)).toEqual(['It is noon.', 'Il est midi.']);
    expect(h.slack.callsTo('reactions.add').filter((c) => c.args.name === 'eyes')).toEqual([]);
  });

  it('interrupt: the running turn is stopped and the new message starts one', async () => {
    h = await startSlackHarness({ extraTools: [getCurrentTime], env: { HERMES_BUSY_MODE: 'interrupt' } });
    h.ai.enqueue({ hang: true }, { text: 'Il est midi.' });
    const ts = await h.mention('C1', 'U1', 'look up the time and tell me');
    await h.slack.waitFor('the first model call', () => h!.ai.requests.length === 1);
    await h.say('C1', 'U1', 'no wait, say it in French', { threadTs: ts });
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'C1', thread_ts: ts }).length > 0);
    await h.core.gateway.idle();
    expect(h.ai.abandoned).toBe(1);
    expect(h.ai.requests).toHaveLength(2);
    expect(userTexts(h.ai.requests[1]).at(-1)).toMatch(/no wait, say it in French$/);
    expect(h.slack.posts({ channel: 'C1', thread_ts: ts }).map((p) => p.text)).toEqual(['Il est midi.']);
  });

  it('interrupt while the answer streams: what was written stays, says who stopped it, and the stop is audited', async () => {
    h = await startSlackHarness({ env: { HERMES_BUSY_MODE: 'interrupt', HERMES_STREAMING: 'on' } });
    const words = Array.from({ length: 40 }, (_, i) => `word${i} `);
    h.ai.enqueue({ text: words.join(''), stream: { textChunks: words, chunkDelayMs: 250 } }, { text: 'Il est midi.' });
    const ts = await h.mention('C1', 'U1', 'write a lot');
    await h.slack.waitFor('the answer streaming', () => (h!.slack.streams()[0]?.text ?? '').includes('word1'));
    await h.say('C1', 'U2', 'no wait, say it in French', { threadTs: ts });
    await h.slack.waitFor('both streams stopped', () => h!.slack.streams().length === 2 && h!.slack.streams().every((s) => s.state === 'stopped'), 15_000);
    await h.core.gateway.idle();
    const [first, second] = h.slack.streams();
    expect(first!.text).toMatch(/^word0\b/);
    expect(first!.text).not.toContain('word39');
    expect(first!.text.trimEnd().endsWith('_Stopped by <@U2>._')).toBe(true);
    expect(second!.text).toBe('Il est midi.');
    const stops = await h.core.audit.list({ kind: 'stop' }, { limit: 10, offset: 0 });
    expect(stops.entries).toEqual([expect.objectContaining({ outcome: 'stopped', actor: expect.stringContaining('U2'), detail: expect.objectContaining({ via: 'interrupt' }) })]);
  });

  it('a channel policy\'s busy_mode wins over HERMES_BUSY_MODE there: queue in its channel, steer elsewhere', async () => {
    const file = await configFile(['channels:', '  slack:CQUEUE:', '    busy_mode: queue'].join('\n'));
    h = await startSlackHarness({ extraTools: [getCurrentTime], env: { HERMES_CONFIG: file, HERMES_BUSY_MODE: 'steer' } });
    // In CQUEUE: the message waits for its own turn (three model calls, two answers, no eyes).
    let gate = held();
    h.ai.setHandler(async (_req, i) => (i === 0 ? (await gate.wait, CALL_TOOL) : i === 1 ? { text: 'It is noon.' } : { text: 'Il est midi.' }));
    const queued = await secondMessageWhileBusy(h, 'CQUEUE');
    gate.release();
    await h.slack.waitFor('two answers', () => h!.slack.posts({ channel: 'CQUEUE', thread_ts: queued.ts }).length === 2);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(3);
    expect(h.slack.posts({ channel: 'CQUEUE', thread_ts: queued.ts }).map((p) => p.text)).toEqual(['It is noon.', 'Il est midi.']);
    expect(h.slack.callsTo('reactions.add').filter((c) => c.args.name === 'eyes')).toEqual([]);

    // In C1 (no policy): HERMES_BUSY_MODE=steer folds it into the running turn.
    gate = held();
    h.ai.setHandler(async (_req, i) => (i === 3 ? (await gate.wait, CALL_TOOL) : { text: 'Il est midi, encore.' }));
    const steered = await secondMessageWhileBusy(h, 'C1');
    gate.release();
    await h.slack.waitFor('the answer', () => h!.slack.posts({ channel: 'C1', thread_ts: steered.ts }).length > 0);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(5);
    expect(userTexts(h.ai.requests[4]).at(-1)).toMatch(/and say it in French please$/);
    expect(h.slack.posts({ channel: 'C1', thread_ts: steered.ts }).map((p) => p.text)).toEqual(['Il est midi, encore.']);
    expect(h.slack.callsTo('reactions.add').filter((c) => c.args.name === 'eyes').map((c) => c.args.timestamp)).toEqual([steered.steerTs]);
  });
});
