import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/basics/types.js';
import { createTracer, type TraceEvent } from '../../src/runtime/trace/tracer.js';
import { createRedactor } from '../../src/runtime/trace/redact.js';
import { createPromptJoiner, joinPrompts, sameJson } from '../../src/runtime/trace/trace-prompts.js';
import { readTraceEvents } from '../../src/operations/eval/trace-reader.js';
import { readTurn } from '../../src/runtime/trace/trace-cli.js';
import { createTraceIndex } from '../../src/operations/dashboard/trace-index.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const SYSTEM: ChatMessage = { role: 'system', content: 'You are hermes. '.repeat(40) };

/** A turn's prompts as the loop builds them: each step's prompt is a fresh copy (as read from the session) plus what the step added. */
function turnPrompts(steps: number, user = 'look up four items'): ChatMessage[][] {
  const history: ChatMessage[] = [{ role: 'user', content: user }];
  const out: ChatMessage[][] = [];
  for (let s = 1; s <= steps; s++) {
    out.push(structuredClone([SYSTEM, ...history]));
    history.push({ role: 'assistant', content: null, toolCalls: [{ id: `c${s}`, name: 'lookup', arguments: `{"key":"item-${s}"}` }] });
    history.push({ role: 'tool', toolCallId: `c${s}`, name: 'lookup', content: `value of item-${s}` });
  }
  return out;
}

function modelCall(turnId: string, step: number, messages: ChatMessage[], mark: { agent?: string; parentCallId?: string } = {}): TraceEvent {
  return { type: 'model_call', turnId, step, model: 'm', messages, tools: ['lookup'], response: { content: null, toolCalls: [], parseErrors: [] }, usage: { promptTokens: 1, completionTokens: 1 }, latencyMs: 1, ...mark };
}

const turnEnd = (turnId: string): TraceEvent => ({ type: 'turn_end', turnId, outcome: 'answered', steps: 1, durationMs: 1, promptTokens: 0, completionTokens: 0 });

async function lines(d: string): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for (const f of (await readdir(d)).sort()) {
    for (const l of (await readFile(path.join(d, f), 'utf8')).split('\n')) if (l) out.push(JSON.parse(l) as Record<string, unknown>);
  }
  return out;
}

async function tracerIn(now?: () => number) {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-trace-prompts-'));
  return createTracer({ dir, log: pino({ level: 'silent' }), redact: createRedactor(['sk-configured-secret-1234']), invalid: 'throw', ...(now && { now }) });
}

describe('model call prompts written once (trace-prompts.ts)', () => {
  it('writes each message of a turn once and every reader gets each step’s whole prompt back', async () => {
    const tracer = await tracerIn();
    const prompts = turnPrompts(5);
    for (const [i, p] of prompts.entries()) tracer.record(modelCall('t1', i + 1, p));
    tracer.record(turnEnd('t1'));
    await tracer.close();

    const written = (await lines(dir!)).filter((l) => l.type === 'model_call');
    expect(written[0]!.promptFrom).toBeUndefined();
    expect(written[0]!.messages).toHaveLength(2);
    for (let i = 1; i < 5; i++) {
      // Step i+1 adds the assistant's call and its result to step i's prompt.
      expect(written[i]!.promptFrom).toEqual({ step: i, keep: 2 * i });
      expect(written[i]!.messages).toEqual(prompts[i]!.slice(2 * i));
    }
    const text = (await readdir(dir!)).length === 1 ? await readFile(path.join(dir!, (await readdir(dir!))[0]!), 'utf8') : '';
    expect(text.split('You are hermes.').length - 1).toBe(40); // the system prompt once, not five times

    const expected = prompts.map((p) => JSON.parse(JSON.stringify(p)) as unknown);
    // eval, replay, feedback: readTraceEvents.
    const events = (await readTraceEvents(dir!)).filter((e) => e.type === 'model_call');
    expect(events.map((e) => (e.type === 'model_call' ? e.messages : undefined))).toEqual(expected);
    expect(events.every((e) => !('promptFrom' in e) && !('promptIncomplete' in e))).toBe(true);
    // `npm run trace`.
    expect((await readTurn(dir!, 't1')).filter((e) => e.type === 'model_call').map((e) => e.messages)).toEqual(expected);
    // The dashboard's turn page and its replay.
    const index = createTraceIndex(dir!);
    await index.refresh();
    expect((await index.readEvents('t1')).filter((e) => e.type === 'model_call').map((e) => e.messages)).toEqual(expected);
  });

  it('writes the whole prompt when its start changed, for a new day, after the turn ended, and keeps sub-agent runs apart', async () => {
    let at = Date.parse('2026-03-01T23:59:59.000Z');
    const tracer = await tracerIn(() => at);
    const [p1, p2, p3] = turnPrompts(3);
    const sub = turnPrompts(2, 'research this');
    tracer.record(modelCall('t1', 1, p1!));
    tracer.record(modelCall('t1', 1, sub[0]!, { agent: 'researcher', parentCallId: 'c1' }));
    tracer.record(modelCall('t1', 2, p2!));
    tracer.record(modelCall('t1', 2, sub[1]!, { agent: 'researcher', parentCallId: 'c1' }));
    // A running summary replaced the start of the history: nothing is shared after the system prompt.
    const summarised: ChatMessage[] = [{ ...SYSTEM, content: `${SYSTEM.content}\nSummary: earlier talk.` }, ...p3!.slice(3)];
    tracer.record(modelCall('t1', 3, summarised));
    at += 2000; // the next day: a new file
    tracer.record(modelCall('t1', 4, [...summarised, { role: 'user', content: 'more' }]));
    tracer.record({ type: 'approval', turnId: 't1', approvalId: 'a1', tool: 'send_email', status: 'pending' });
    // The same turn again (resumed after the approval): written whole.
    tracer.record(modelCall('t1', 5, [...summarised, { role: 'user', content: 'more' }, { role: 'user', content: 'again' }]));
    tracer.record(turnEnd('t1'));
    // A turn id seen again after its end: written whole too.
    tracer.record(modelCall('t1', 6, [...summarised, { role: 'user', content: 'more' }, { role: 'user', content: 'again' }, { role: 'user', content: 'and again' }]));
    await tracer.close();

    const written = (await lines(dir!)).filter((l) => l.type === 'model_call');
    expect(written.map((l) => l.promptFrom)).toEqual([undefined, undefined, { step: 1, keep: 2 }, { step: 1, keep: 2 }, undefined, undefined, undefined, undefined]);
    expect(written[3]!.agent).toBe('researcher');
    expect(await readdir(dir!)).toEqual(['2026-03-01.jsonl', '2026-03-02.jsonl']);
    const events = (await readTraceEvents(dir!)).filter((e) => e.type === 'model_call');
    expect(events.map((e) => (e.type === 'model_call' ? e.messages.length : 0))).toEqual([2, 2, 4, 4, 4, 5, 6, 7]);
    expect(events[3]).toMatchObject({ agent: 'researcher', messages: JSON.parse(JSON.stringify(sub[1])) });
  });

  it('redacts the new messages like whole prompts and never refers to a line that was not written', async () => {
    const tracer = await tracerIn();
    const [p1, p2] = turnPrompts(2);
    tracer.record(modelCall('t1', 1, p1!));
    const withSecret: ChatMessage[] = [...p2!.slice(0, 3), { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'key sk-configured-secret-1234 and {"token":"x"}' }];
    tracer.record(modelCall('t1', 2, withSecret));
    // A record that cannot be serialised loses its line; the next call of the run must not refer to it.
    const circular: Record<string, unknown> = { role: 'tool', content: 'x' };
    circular.self = circular;
    tracer.record(modelCall('t1', 3, [...withSecret, circular as unknown as ChatMessage]));
    tracer.record(modelCall('t1', 4, [...withSecret, { role: 'user', content: 'next' }]));
    await tracer.close();
    const text = (await readdir(dir!)).map(async (f) => readFile(path.join(dir!, f), 'utf8'));
    const all = (await Promise.all(text)).join('');
    expect(all).not.toContain('sk-configured-secret-1234');
    const written = (await lines(dir!)).filter((l) => l.type === 'model_call' || l.note);
    expect(written.map((l) => l.promptFrom ?? l.note)).toEqual([undefined, { step: 1, keep: 2 }, 'unserialisable event', undefined]);
  });

  it('reads old traces (whole prompts) as they are, and marks a prompt whose earlier line is lost', () => {
    const old = turnPrompts(2).map((p, i) => ({ ts: 'x', ...modelCall('t1', i + 1, p) }));
    expect(joinPrompts(old)).toEqual(old);
    const join = createPromptJoiner();
    const orphan = { ts: 'x', ...modelCall('t2', 3, [{ role: 'user', content: 'new' }]), promptFrom: { step: 2, keep: 4 } };
    const r = join(orphan) as Record<string, unknown>;
    expect(r.promptIncomplete).toBe(true);
    expect(r.messages).toEqual([{ role: 'user', content: 'new' }]);
    expect(r.promptFrom).toBeUndefined();
    // A reference to a step other than the run's last one is not trusted either.
    join({ ts: 'x', ...modelCall('t3', 1, [SYSTEM]) });
    expect((join({ ts: 'x', ...modelCall('t3', 3, []), promptFrom: { step: 2, keep: 1 } }) as Record<string, unknown>).promptIncomplete).toBe(true);
  });

  it('compares messages as their JSON would, and counts anything unusual as different', () => {
    expect(sameJson({ role: 'user', content: 'a', extra: undefined }, { content: 'a', role: 'user' })).toBe(true);
    expect(sameJson({ role: 'user', content: 'a' }, { role: 'user', content: 'b' })).toBe(false);
    expect(sameJson({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toBe(true);
    expect(sameJson({ a: [1, { b: null }] }, { a: [1, { b: 0 }] })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson({ d: new Date(0) }, { d: new Date(0) })).toBe(false);
    expect(sameJson(NaN, NaN)).toBe(false);
  });

  it('a file written before this format joins to itself', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-trace-prompts-'));
    const old = turnPrompts(3).map((p, i) => JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', ...modelCall('t1', i + 1, p) }));
    await writeFile(path.join(dir, '2026-01-01.jsonl'), `${old.join('\n')}\n`);
    const events = await readTraceEvents(dir);
    expect(events.map((e) => (e.type === 'model_call' ? e.messages.length : 0))).toEqual([2, 4, 6]);
  });
});
