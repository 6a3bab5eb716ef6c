import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTraceIndex, type TraceIndex } from '../../src/operations/dashboard/trace-index.js';
import { line, turnLines } from './trace-lines.js';

/**
 * What the index holds per turn, measured structurally (no clock, no heap sampling): every value
 * reachable from its turns and refusals is walked. Traces here are heavy on purpose (a 5 KB
 * message, 20 KB prompts, a 30 KB tool result per turn); the index must keep only the list's
 * fields, with the message clipped, and read the rest back from the files on demand. A change that
 * kept parsed records, prompts or results in memory fails here, long before a bench shows it.
 */

const TURNS = 200;
const MESSAGE = 'word '.repeat(1000); // 5,000 characters
const PROMPT = 'You are hermes. '.repeat(1250); // 20,000 characters
const RESULT = 'r'.repeat(30_000);

const TURN_KEYS = ['turnId', 'startedAt', 'platform', 'userKey', 'sessionId', 'text', 'search', 'outcome', 'steps', 'durationMs', 'promptTokens', 'completionTokens', 'modelCalls', 'toolCalls', 'approvals', 'subagents', 'lines'];
const TOOL_CALL_KEYS = ['name', 'ok', 'durationMs', 'errorKind', 'agent'];
const REFUSAL_KEYS = ['at', 'reason', 'platform'];

let dir: string;
let index: TraceIndex;
let traceBytes = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-index-retention-'));
  let text = '';
  for (let i = 0; i < TURNS; i++) {
    const id = `t-${String(i).padStart(4, '0')}`;
    const at = new Date(Date.parse('2026-12-01T00:00:00Z') + i * 60_000);
    // turnLines' second model_call carries a short prompt: add one with the long one too.
    text += turnLines(id, at, { text: `${i} ${MESSAGE}`, result: RESULT, args: { code: PROMPT.slice(0, 5000) }, platform: i % 2 ? 'slack' : 'discord', userKey: `slack:T1:U${i % 7}` });
    text += line(new Date(at.getTime() + 200).toISOString(), { type: 'model_call', turnId: id, step: 3, model: 'fake-model', messages: [{ role: 'system', content: PROMPT }, { role: 'user', content: MESSAGE }], tools: [], response: { content: 'done', toolCalls: [], parseErrors: [] }, usage: { promptTokens: 5000, completionTokens: 1 }, latencyMs: 10 });
  }
  text += line('2026-12-01T05:00:00.000Z', { type: 'refusal', reason: 'rate', source: 'message', platform: 'slack', userKey: 'slack:T1:U9' });
  await writeFile(path.join(dir, '2026-12-01.jsonl'), text);
  traceBytes = Buffer.byteLength(text);
  index = createTraceIndex(dir);
  await index.refresh();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Rough bytes of what a value holds: string characters, 8 per number/boolean/slot, 16 per object. Throws on anything but plain data. */
function weigh(value: unknown, where: string, allowedKeys: (where: string) => string[] | undefined): number {
  if (typeof value === 'string') return value.length;
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined) return 8;
  if (Array.isArray(value)) return 16 + value.reduce((n: number, v, i) => n + weigh(v, `${where}[${i}]`, allowedKeys), 0);
  if (value && Object.getPrototypeOf(value) === Object.prototype) {
    const keys = Object.keys(value);
    const allowed = allowedKeys(where);
    const extra = keys.filter((k) => !allowed?.includes(k));
    if (extra.length) throw new Error(`${where} holds ${extra.join(', ')}`);
    return 16 + keys.reduce((n, k) => n + 8 + weigh((value as Record<string, unknown>)[k], `${where}.${k}`, allowedKeys), 0);
  }
  throw new Error(`${where} holds a ${Object.prototype.toString.call(value)}, not plain data`);
}

const keysAt = (where: string) => (/^turn\.toolCalls\[\d+\]$/.test(where) ? TOOL_CALL_KEYS : where === 'turn' ? TURN_KEYS : where === 'refusal' ? REFUSAL_KEYS : undefined);

describe('what the trace index holds', () => {
  it('keeps per turn only the list fields, as plain data, with the message clipped: a small fixed share of the trace', () => {
    const turns = index.turns();
    expect(turns).toHaveLength(TURNS);
    let held = 0;
    for (const t of turns) {
      const bytes = weigh(t, 'turn', keysAt);
      // 301 characters of message for the list, up to 2,000 for the text filter, ids and numbers.
      expect(t.text.length).toBeLessThanOrEqual(301);
      expect(t.search.length).toBeLessThanOrEqual(2000);
      expect(bytes).toBeLessThan(3000);
      // Where the lines are: three numbers each, never the lines themselves.
      expect(t.lines).toHaveLength(3 * 6);
      expect(t.lines.every((n) => Number.isInteger(n) && n >= 0)).toBe(true);
      expect(t.toolCalls).toEqual([{ name: 'calculator', ok: true, durationMs: 3 }]);
      held += bytes;
    }
    for (const r of index.refusals()) held += weigh(r, 'refusal', keysAt);
    const perTurn = held / TURNS;
    const tracePerTurn = traceBytes / TURNS;
    expect(tracePerTurn).toBeGreaterThan(70_000);
    process.stderr.write(`index retention: ${perTurn.toFixed(0)} bytes held per turn of ${tracePerTurn.toFixed(0)} in the traces\n`);
    // Under 4 % of what the traces hold per turn here (about 2.8 KB of 76 KB, most of it the 2,000
    // characters the text filter searches).
    expect(perTurn / tracePerTurn).toBeLessThan(0.04);
  });

  it('reads a turn’s whole records back from the files when its page asks', async () => {
    const events = await index.readEvents('t-0007');
    expect(events.map((e) => e.type)).toEqual(['turn_start', 'model_call', 'tool_call', 'model_call', 'turn_end', 'model_call']);
    expect(events[0]!.text).toBe(`7 ${MESSAGE}`);
    expect(events.find((e) => e.type === 'tool_call')!.result).toBe(RESULT);
    expect((events[5]!.messages as Array<{ content: string }>)[0]!.content).toBe(PROMPT);
  });
});
