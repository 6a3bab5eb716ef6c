import { describe, expect, it } from 'vitest';
import { createSpanPlanner, traceIdOf, turnSpanIdOf, type PlannedSpan } from '../../src/operations/telemetry/span-plan.js';
import { createRedactor } from '../../src/runtime/trace/redact.js';
import type { TraceEvent } from '../../src/runtime/trace/tracer.js';
import { FAKE_SLACK_BOT_TOKEN } from '../helpers/fake-secrets.js';

/**
 * The planner alone: records in, spans out. The end-to-end export test covers the main agent
 * through the real SDK; these cover what a single turn there cannot show cheaply — sub-agent
 * records, approvals, a turn that ends in another process, and records this file does not know.
 */

const redact = createRedactor(['configured-secret-value']);
const planner = (content = false, maxOpenTurns?: number) => createSpanPlanner({ content, redact, ...(maxOpenTurns && { maxOpenTurns }) });

const start = (turnId: string): TraceEvent => ({ type: 'turn_start', turnId, sessionId: `s-${turnId}`, platform: 'discord', userKey: 'discord:42', text: 'research this' });
const end = (turnId: string, outcome = 'answered', durationMs = 1000): TraceEvent => ({ type: 'turn_end', turnId, outcome, steps: 2, durationMs, promptTokens: 30, completionTokens: 8 });
function model(turnId: string, extra: Record<string, unknown> = {}, latencyMs = 100): TraceEvent {
  return {
    type: 'model_call', turnId, step: 1, model: 'm-2025', messages: [], tools: [], latencyMs,
    response: { content: 'hi', toolCalls: [], parseErrors: [], usage: { promptTokens: 10, completionTokens: 4 }, finishReason: 'stop', model: 'm-2025' },
    usage: { promptTokens: 10, completionTokens: 4 },
    ...extra,
  } as TraceEvent;
}
function tool(turnId: string, callId: string, extra: Record<string, unknown> = {}): TraceEvent {
  return { type: 'tool_call', turnId, callId, name: 'web_search', args: { q: 'x' }, ok: true, result: 'found', durationMs: 50, ...extra } as TraceEvent;
}

describe('span planner', () => {
  it('without sub-agent end records, draws one invoke_agent span per run around its calls, under the turn', () => {
    const p = planner();
    p.plan(start('t1'), 1000);
    const a1 = p.plan(model('t1', { agent: 'researcher', parentCallId: 'd1' }), 1200);
    const a2 = p.plan(tool('t1', 'w1', { agent: 'researcher', parentCallId: 'd1', startedAt: 1250 }), 1400);
    const b1 = p.plan(model('t1', { agent: 'researcher', parentCallId: 'd2' }, 300), 1500);
    const main = p.plan(model('t1'), 1600);
    const [r1, r2, turn] = p.plan(end('t1', 'answered', 700), 1700);

    expect([r1!.name, r2!.name, turn!.name]).toEqual(['invoke_agent researcher', 'invoke_agent researcher', 'invoke_agent hermes']);
    expect(r1!.spanId).not.toBe(r2!.spanId);
    for (const r of [r1!, r2!]) {
      expect(r.parentSpanId).toBe(turn!.spanId);
      expect(r.traceId).toBe(turn!.traceId);
      expect(r.attributes['gen_ai.agent.name']).toBe('researcher');
      expect(r.attributes['gen_ai.operation.name']).toBe('invoke_agent');
    }
    expect(a1[0]!.parentSpanId).toBe(r1!.spanId);
    expect(a2[0]!.parentSpanId).toBe(r1!.spanId);
    expect(b1[0]!.parentSpanId).toBe(r2!.spanId);
    expect(main[0]!.parentSpanId).toBe(turn!.spanId);
    expect(a1[0]!.attributes['gen_ai.agent.name']).toBe('researcher');
    expect(main[0]!.attributes['gen_ai.agent.name']).toBeUndefined();
    // The run spans cover their children: first start to last end; tokens are the run's own.
    expect([r1!.startMs, r1!.endMs]).toEqual([1100, 1300]);
    expect(a2[0]!.startMs).toBe(1250);
    expect([r2!.startMs, r2!.endMs]).toEqual([1200, 1500]);
    expect([r1!.attributes['gen_ai.usage.input_tokens'], r1!.attributes['gen_ai.usage.output_tokens']]).toEqual([10, 4]);
    expect([turn!.startMs, turn!.endMs]).toEqual([1000, 1700]);
  });

  it('with sub-agent end records, nests each run under the delegate call that started it: turn > execute_tool delegate > invoke_agent > calls', () => {
    const p = planner();
    p.plan(start('t5'), 0);
    const [first] = p.plan(model('t5'), 100);
    // Two researcher runs in parallel for calls d1 and d2, then their end records, then the parent's delegate calls.
    const [r1Chat] = p.plan(model('t5', { agent: 'researcher', parentCallId: 'd1' }), 300);
    const [r2Tool] = p.plan(tool('t5', 'w9', { agent: 'researcher', parentCallId: 'd2' }), 350);
    const [run1] = p.plan({ type: 'subagent', turnId: 't5', callId: 'd1', agent: 'researcher', outcome: 'answered', steps: 1, durationMs: 250, promptTokens: 10, completionTokens: 4 } as unknown as TraceEvent, 360);
    const [run2] = p.plan({ type: 'subagent', turnId: 't5', callId: 'd2', agent: 'researcher', outcome: 'model_error:timeout', steps: 2, durationMs: 240, promptTokens: 7, completionTokens: 0 } as unknown as TraceEvent, 370);
    const [d1] = p.plan(tool('t5', 'd1', { name: 'delegate', startedAt: 105, durationMs: 255 }), 380);
    const [d2] = p.plan(tool('t5', 'd2', { name: 'delegate', startedAt: 106, durationMs: 264 }), 380);
    const [other] = p.plan(tool('t5', 'w1'), 380);
    const spans = p.plan(end('t5'), 400);
    const turn = spans.find((s) => s.name === 'invoke_agent hermes')!;

    // Nothing left to draw at turn end: the runs were sent when they ended.
    expect(spans.map((s) => s.name)).toEqual(['invoke_agent hermes']);
    expect(first!.parentSpanId).toBe(turn.spanId);
    expect([d1!.parentSpanId, d2!.parentSpanId]).toEqual([turn.spanId, turn.spanId]);
    expect(run1!.parentSpanId).toBe(d1!.spanId);
    expect(run2!.parentSpanId).toBe(d2!.spanId);
    expect(r1Chat!.parentSpanId).toBe(run1!.spanId);
    expect(r2Tool!.parentSpanId).toBe(run2!.spanId);
    expect(new Set([turn.spanId, d1!.spanId, d2!.spanId, run1!.spanId, run2!.spanId]).size).toBe(5);
    // Only delegate calls that started a run get a fixed id; other tools get the SDK's random one.
    expect(other!.spanId).toBeUndefined();
    expect(run1!).toMatchObject({ name: 'invoke_agent researcher', startMs: 110, endMs: 360 });
    expect(run1!.attributes).toMatchObject({ 'gen_ai.agent.name': 'researcher', 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 4, 'hermes.agent.outcome': 'answered', 'hermes.agent.steps': 1 });
    expect(run1!.error).toBeUndefined();
    expect(run2!.error).toEqual({ type: 'model_error:timeout' });
  });

  it('gives a turn the same trace and span ids in a new process, so a turn resumed after a restart stays one trace', () => {
    const before = planner();
    before.plan(start('t2'), 0);
    const [call] = before.plan(model('t2'), 500);
    const after = planner();
    const [turn] = after.plan(end('t2'), 90_000);
    expect(turn!.traceId).toBe(traceIdOf('t2'));
    expect(turn!.spanId).toBe(turnSpanIdOf('t2'));
    expect(call!.traceId).toBe(turn!.traceId);
    expect(call!.parentSpanId).toBe(turn!.spanId);
    expect(turn!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(turn!.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(traceIdOf('t3')).not.toBe(turn!.traceId);
    // What only the first process knew is gone, and nothing breaks for it.
    expect(turn!.attributes['gen_ai.conversation.id']).toBeUndefined();
    expect(turn!.attributes['hermes.turn.outcome']).toBe('answered');
  });

  it('puts approvals on the turn span as events, with who decided', () => {
    const p = planner();
    p.plan(start('t4'), 0);
    p.plan({ type: 'approval', turnId: 't4', approvalId: 'a1', tool: 'send_email', status: 'pending' }, 100);
    p.plan({ type: 'approval', turnId: 't4', approvalId: 'a1', tool: 'send_email', status: 'approved', by: 'discord:7' }, 900);
    const [turn] = p.plan(end('t4'), 1000);
    expect(turn!.events).toEqual([
      { name: 'hermes.approval', atMs: 100, attributes: { 'gen_ai.tool.name': 'send_email', 'hermes.approval.status': 'pending' } },
      { name: 'hermes.approval', atMs: 900, attributes: { 'gen_ai.tool.name': 'send_email', 'hermes.approval.status': 'approved', 'hermes.approval.by': 'discord:7' } },
    ]);
  });

  it('says which outcomes are failures: errors and model errors, not limits or stops', () => {
    const outcomes = ['answered', 'step_limit', 'aborted', 'budget_exhausted', 'error', 'model_error:timeout'];
    const failed = outcomes.map((o, i) => planner().plan(end(`o${i}`, o), 10)[0]!.error?.type);
    expect(failed).toEqual([undefined, undefined, undefined, undefined, 'error', 'model_error:timeout']);
    const [chat] = planner().plan(model('e1', { error: 'timeout: The model did not answer within 60 s.', response: null, usage: undefined }), 10);
    expect(chat!.error).toEqual({ type: 'timeout', message: 'timeout: The model did not answer within 60 s.' });
    expect(chat!.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
    const [failedTool] = planner().plan(tool('e2', 'x', { ok: false, errorKind: 'timeout' }), 10);
    expect(failedTool!.error).toEqual({ type: 'timeout' });
  });

  it('redacts content it is allowed to show, and shows none unless allowed', () => {
    const secretful = tool('c1', 'k1', { args: { token: 'abc', note: `use ${FAKE_SLACK_BOT_TOKEN}` }, result: 'configured-secret-value is set' });
    const [plain] = planner(false).plan(secretful, 10);
    expect(Object.keys(plain!.attributes).filter((k) => k.includes('arguments') || k.includes('result'))).toEqual([]);
    const [shown] = planner(true).plan(secretful, 10);
    expect(JSON.parse(String(shown!.attributes['gen_ai.tool.call.arguments']))).toEqual({ token: '[redacted]', note: 'use [redacted]' });
    expect(shown!.attributes['gen_ai.tool.call.result']).toBe('[redacted] is set');
  });

  it('ignores records it does not know and records that are not what they claim, without throwing', () => {
    const p = planner(true);
    expect(p.plan({ type: 'refusal', reason: 'rate', source: 'message', platform: 'slack', userKey: 'slack:U1' }, 1)).toEqual([]);
    expect(p.plan({ type: 'subagent_note', turnId: 't' } as unknown as TraceEvent, 1)).toEqual([]);
    expect(p.plan({ type: 'model_call', turnId: 't', messages: 'not a list', response: 42 } as unknown as TraceEvent, 1)).toHaveLength(1);
    expect(p.plan({ type: 'tool_call' } as unknown as TraceEvent, 1)).toEqual(expect.any(Array));
  });

  it('remembers a bounded number of open turns, forgetting the oldest', () => {
    const p = planner(false, 2);
    for (const id of ['a', 'b', 'c']) p.plan(start(id), 0);
    const conversation = (id: string) => (p.plan(end(id), 10).find((s: PlannedSpan) => s.name === 'invoke_agent hermes')!.attributes['gen_ai.conversation.id']);
    expect(conversation('a')).toBeUndefined();
    expect(conversation('b')).toBe('s-b');
    expect(conversation('c')).toBe('s-c');
  });
});
