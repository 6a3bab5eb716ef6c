import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseTraceLine, plainlyValid, traceEventProblems, traceEventSchema, type TraceEvent } from '../../src/runtime/trace/trace-schema.js';
import { createTracer } from '../../src/runtime/trace/tracer.js';

const modelCall: TraceEvent = {
  type: 'model_call', turnId: 't1', step: 1, model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: ['calculator'],
  response: { content: 'It is 4.', toolCalls: [], parseErrors: [], usage: { promptTokens: 3, completionTokens: 2 }, finishReason: 'stop', model: 'm' },
  usage: { promptTokens: 3, completionTokens: 2 }, latencyMs: 12, grounding: { claims: ['4'] },
};

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('trace record schema', () => {
  it('accepts every record type as the writers build them', () => {
    const records: TraceEvent[] = [
      { type: 'turn_start', turnId: 't1', sessionId: 's', platform: 'slack', userKey: 'slack:T:U', text: 'hi' },
      modelCall,
      { type: 'model_call', turnId: 't1', step: 2, model: 'm', messages: [], tools: [], response: null, latencyMs: 5, error: 'timeout: slow', agent: 'researcher', parentCallId: 'c1' },
      { type: 'tool_call', turnId: 't1', callId: 'c1', name: 'calculator', args: { expression: '2+2' }, ok: true, result: '4', durationMs: 1, startedAt: 5 },
      { type: 'subagent', turnId: 't1', callId: 'c1', agent: 'researcher', outcome: 'answered', steps: 2, durationMs: 9, promptTokens: 1, completionTokens: 1 },
      { type: 'approval', turnId: 't1', approvalId: 'a', tool: 'send_email', status: 'pending' },
      { type: 'turn_end', turnId: 't1', outcome: 'answered', steps: 2, durationMs: 10, promptTokens: 3, completionTokens: 2 },
      { type: 'refusal', reason: 'rate_limit', source: 'message', platform: 'slack', userKey: 'slack:T:U' },
    ];
    for (const r of records) expect(traceEventProblems(r), r.type).toEqual([]);
  });

  it('names what is wrong with a record that does not match its type', () => {
    expect(traceEventProblems({ type: 'turn_end', turnId: 't1', outcome: 'answered', steps: -1, durationMs: 1, promptTokens: 0, completionTokens: 0 })).toEqual([expect.stringMatching(/^steps: /)]);
    expect(traceEventProblems({ ...modelCall, messages: [{ content: 'x' }] })[0]).toMatch(/^messages\.0: not a chat message/);
    expect(traceEventProblems({ type: 'party', turnId: 't1' })).toHaveLength(1);
  });

  it('passes by hand only what the schema passes, and every record type without a parse', () => {
    const toolCall = { type: 'tool_call', turnId: 't1', callId: 'c1', name: 'calculator', args: { expression: '2+2' }, ok: true, result: '4', durationMs: 1, startedAt: 5, errorKind: 'x', raw: [1] };
    const failed = { type: 'model_call', turnId: 't1', step: 2, model: 'm', requestModel: 'alias', messages: [], tools: [], response: null, latencyMs: 5, error: 'timeout: slow', agent: 'researcher', parentCallId: 'c1' };
    const bases: Record<string, unknown>[] = [
      modelCall as Record<string, unknown>, failed, toolCall,
      { type: 'turn_start', turnId: 't1', sessionId: 's', platform: 'slack', userKey: 'slack:T:U', text: 'hi' },
      { type: 'turn_end', turnId: 't1', outcome: 'answered', steps: 1, durationMs: 1.5, promptTokens: 0, completionTokens: 3 },
      { type: 'subagent', turnId: 't1', callId: 'c1', agent: 'researcher', outcome: 'answered', steps: 2, durationMs: 9, promptTokens: 1, completionTokens: 1 },
      { type: 'approval', turnId: 't1', approvalId: 'a', tool: 'send_email', status: 'approved', by: 'slack:T:U' },
      { type: 'refusal', turnId: 't1', reason: 'rate_limit', source: 'message', platform: 'slack', userKey: 'slack:T:U' },
    ];
    for (const b of bases) expect(plainlyValid(b), String(b.type)).toBe(true);
    // Every field of each, removed or set to each odd value, and some odd values inside the lists.
    const odd: unknown[] = [undefined, null, -1, 0, 1.5, NaN, Infinity, -Infinity, 2 ** 60, '', 'x', true, [], {}, ['x'], [1], [{}], [{ role: 1 }], [{ role: 'user' }], { promptTokens: 1 }, { promptTokens: 1, completionTokens: -1 }, { claims: [1] }, { claims: ['a'] }, { step: 1, keep: 2 }, { step: 1 }, { step: -1, keep: 1 }, { step: 1, keep: 1.5 }];
    let checked = 0;
    let passed = 0;
    for (const b of bases) {
      for (const key of [...Object.keys(b), 'agent', 'parentCallId', 'requestModel', 'grounding', 'usage', 'startedAt', 'errorKind', 'promptFrom', 'promptIncomplete']) {
        const { [key]: _dropped, ...without } = b;
        for (const r of [without, ...odd.map((v) => ({ ...b, [key]: v }))]) {
          checked++;
          if (!plainlyValid(r)) continue;
          passed++;
          expect(traceEventSchema.safeParse(r).success, `${String(b.type)} with ${key} = ${JSON.stringify(r[key])}`).toBe(true);
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
    expect(passed).toBeGreaterThan(100);
    // An unknown type (and anything unsure) goes to the schema.
    expect(plainlyValid({ type: 'party', turnId: 't1' })).toBe(false);
    expect(plainlyValid(null)).toBe(false);
    expect(plainlyValid([modelCall])).toBe(false);
  });

  it('reads lines back typed, keeps keys it does not know, and skips torn or unknown lines', () => {
    const r = parseTraceLine(JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', ...modelCall, later: 1 }));
    expect(r?.type).toBe('model_call');
    expect(r?.ts).toBe('2026-01-01T00:00:00.000Z');
    expect(r && r.type === 'model_call' ? r.grounding?.claims : undefined).toEqual(['4']);
    expect((r as Record<string, unknown>).later).toBe(1);
    expect(parseTraceLine('{"ts":"2026-01-01T00:00:00.000Z","type":"turn_end","turnId"')).toBeUndefined();
    expect(parseTraceLine(JSON.stringify({ ts: 'x', type: 'party', turnId: 't' }))).toBeUndefined();
    expect(parseTraceLine(JSON.stringify({ type: 'approval', turnId: 't1', approvalId: 'a', tool: 'x', status: 'pending' }))).toBeUndefined(); // no ts
  });

  it('the tracer refuses a bad record when told to throw, and writes it with a warning otherwise', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-trace-schema-'));
    const bad = { type: 'tool_call', turnId: 't1', callId: 'c1', name: 'x', args: {}, ok: 'yes', result: '', durationMs: 1 } as unknown as TraceEvent;
    const strict = createTracer({ dir, log: pino({ level: 'silent' }), redact: (v) => JSON.stringify(v), invalid: 'throw' });
    expect(() => strict.record(bad)).toThrow(/tool_call does not match its schema: ok: /);
    await strict.close();

    const warnings: unknown[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => warnings.push(JSON.parse(l)) });
    const lenient = createTracer({ dir, log, redact: (v) => JSON.stringify(v), invalid: 'log' });
    lenient.record(bad);
    await lenient.close();
    expect(warnings).toEqual([expect.objectContaining({ msg: 'trace record does not match its schema', type: 'tool_call' })]);
    const [file] = await readdir(dir);
    expect(await readFile(path.join(dir, file!), 'utf8')).toContain('"ok":"yes"');
  });
});
