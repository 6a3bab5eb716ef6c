import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { calculator } from '../../tools/calculator.js';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import type { InboundMessage } from '../../src/basics/types.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { FAKE_GITHUB_TOKEN, FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { startFakeCollector, type FakeCollector, type ReceivedSpan } from '../fakes/otlp/fake-collector.js';

/**
 * OpenTelemetry export end to end: a real turn through the gateway (real OpenAI SDK against the
 * scripted fake server, real tools, SQLite on disk) with the real OTLP/HTTP exporter sending to a
 * collector on 127.0.0.1. What arrives is checked the way a trace viewer would read it.
 */

let h: Harness | undefined;
let collector: FakeCollector | undefined;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await h?.close();
  await collector?.close();
  for (const c of closers.splice(0)) await c();
  h = undefined;
  collector = undefined;
});

let n = 0;
function msg(text: string, over: Partial<InboundMessage> = {}): InboundMessage {
  n++;
  return { id: `o${n}-${Date.now()}`, conversation: conv('C1', { isDm: true }), speaker: user('U1'), text, mentioned: false, replyTo: `ts${n}`, ...over };
}

const readNote = defineTool({
  name: 'read_note',
  description: 'Reads the note the user left',
  input: z.object({ which: z.string() }),
  async run() {
    return `the deploy key is ${FAKE_OPENAI_KEY}`;
  },
});

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const turnSpans = (spans: ReceivedSpan[]) => byName(spans, 'invoke_agent hermes');
const CONTENT_KEYS = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];

function otelEnv(c: FakeCollector, extra: Record<string, string> = {}): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_EXPORTER_OTLP_TIMEOUT: '3000', ...extra };
}

/** Runs one message to its answer and sends the spans (flushTraces waits for the export). */
async function runTurn(h: Harness, text: string): Promise<string> {
  const before = h.port.texts().length;
  await h.core.gateway.handleMessage(msg(text));
  const answers = await h.port.waitForCount(isText, before + 1);
  await h.core.flushTraces();
  return (answers[before] as Extract<typeof answers[number], { kind: 'text' }>).text;
}

describe('OpenTelemetry export', () => {
  it('exports a turn as invoke_agent > chat / execute_tool spans with GenAI attributes and no content', async () => {
    collector = await startFakeCollector();
    h = await startHarness({ tools: [getCurrentTime, calculator], env: otelEnv(collector, { OTEL_EXPORTER_OTLP_HEADERS: 'x-team=ops,x-note=a%20b' }) });
    h.fake.enqueue(
      { toolCalls: [{ id: 'c1', name: 'get_current_time', arguments: { timezone: 'Asia/Shanghai' } }, { id: 'c2', name: 'calculator', arguments: { expression: '6 * 7' } }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
      { toolCalls: [{ id: 'c3', name: 'calculator', arguments: { expr: '1+1' } }], usage: { prompt_tokens: 150, completion_tokens: 12 } },
      { text: 'It is late in Shanghai, and 6 * 7 = 42.', usage: { prompt_tokens: 200, completion_tokens: 20 } },
    );
    const question = 'what time is it in Shanghai and what is 6*7? (private words)';
    expect(await runTurn(h, question)).toBe('It is late in Shanghai, and 6 * 7 = 42.');
    const spans = await collector.waitFor((s) => turnSpans(s).length === 1);

    // The wire: OTLP/HTTP JSON to /v1/traces, with the configured headers.
    expect(collector.requests.every((r) => r.path === '/v1/traces' && r.contentType.startsWith('application/json'))).toBe(true);
    expect(collector.requests[0]!.headers['x-team']).toBe('ops');
    expect(collector.requests[0]!.headers['x-note']).toBe('a b');

    // The tree: one turn span at the root, every model and tool span directly under it, one trace.
    const [turn] = turnSpans(spans);
    expect(turn!.parentSpanId).toBeUndefined();
    const chats = byName(spans, 'chat gpt-4o-mini');
    const tools = spans.filter((s) => s.name.startsWith('execute_tool '));
    expect(chats).toHaveLength(3);
    expect(tools.map((s) => s.name).sort()).toEqual(['execute_tool calculator', 'execute_tool calculator', 'execute_tool get_current_time']);
    expect(spans).toHaveLength(7);
    for (const s of [...chats, ...tools]) {
      expect(s.parentSpanId).toBe(turn!.spanId);
      expect(s.traceId).toBe(turn!.traceId);
      expect(s.startMs).toBeGreaterThanOrEqual(turn!.startMs);
      expect(s.endMs).toBeLessThanOrEqual(turn!.endMs);
    }
    expect(turn!.resource['service.name']).toBe('hermes-agent');
    expect(turn!.scope).toBe('hermes-agent');

    // The turn: invoke_agent with the session, the outcome and the tokens of all its steps.
    expect(turn!.kind).toBe(1);
    expect(turn!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'hermes',
      'gen_ai.usage.input_tokens': 450,
      'gen_ai.usage.output_tokens': 42,
      'hermes.turn.outcome': 'answered',
      'hermes.turn.steps': 3,
      'hermes.platform': 'slack',
      'user.id': 'slack:T1:U1',
    });
    expect(turn!.attributes['gen_ai.conversation.id']).toEqual(expect.any(String));
    expect(turn!.status.code).toBe(0);

    // Model calls: chat spans in step order, tokens and finish reasons per call.
    const ordered = [...chats].sort((a, b) => Number(a.attributes['hermes.step']) - Number(b.attributes['hermes.step']));
    expect(ordered.map((s) => [s.attributes['gen_ai.usage.input_tokens'], s.attributes['gen_ai.usage.output_tokens'], s.attributes['gen_ai.response.finish_reasons']])).toEqual([
      [100, 10, ['tool_calls']],
      [150, 12, ['tool_calls']],
      [200, 20, ['stop']],
    ]);
    for (const s of chats) {
      expect(s.kind).toBe(3);
      expect(s.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini',
        'server.address': '127.0.0.1',
      });
    }

    // Tool calls: name and call id; the refused call is an error with its kind.
    const tool = (id: string) => tools.find((s) => s.attributes['gen_ai.tool.call.id'] === id)!;
    expect(tool('c1').attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_current_time', 'gen_ai.tool.type': 'function' });
    expect(tool('c2').attributes['gen_ai.tool.name']).toBe('calculator');
    expect(tool('c2').status.code).toBe(0);
    expect(tool('c3').status.code).toBe(2);
    expect(tool('c3').attributes['error.type']).toBe('invalid_args');
    // The tools of one response ran at once: both began before either the next model call.
    expect(Math.max(tool('c1').startMs, tool('c2').startMs)).toBeLessThanOrEqual(ordered[1]!.startMs);

    // No content by default: no message, argument or result attribute, and none of the words.
    for (const s of spans) for (const key of CONTENT_KEYS) expect(s.attributes[key], `${s.name} ${key}`).toBeUndefined();
    const wire = collector.requests.map((r) => r.body).join('\n');
    expect(wire).not.toContain('private words');
    expect(wire).not.toContain('6 * 7');
    expect(wire).not.toContain('Asia/Shanghai');
  });

  it('with HERMES_OTEL_CONTENT=true puts prompts, completions, arguments and results on spans, redacted', async () => {
    collector = await startFakeCollector();
    h = await startHarness({ extraTools: [readNote], env: otelEnv(collector, { HERMES_OTEL_CONTENT: 'true' }) });
    h.fake.enqueue(
      { toolCalls: [{ id: 'n1', name: 'read_note', arguments: { which: `the one with ${FAKE_GITHUB_TOKEN}` } }] },
      { text: 'The note holds a deploy key; I will not repeat it.' },
    );
    await runTurn(h, `please read my note, my token is ${FAKE_GITHUB_TOKEN}`);
    const spans = await collector.waitFor((s) => turnSpans(s).length === 1);

    const wire = collector.requests.map((r) => r.body).join('\n');
    expect(wire).not.toContain(FAKE_GITHUB_TOKEN);
    expect(wire).not.toContain(FAKE_OPENAI_KEY);

    const [turn] = turnSpans(spans);
    expect(JSON.parse(String(turn!.attributes['gen_ai.input.messages']))).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'please read my note, my token is [redacted]' }] }]);
    expect(JSON.parse(String(turn!.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'The note holds a deploy key; I will not repeat it.' }], finish_reason: 'stop' },
    ]);

    const chats = byName(spans, 'chat gpt-4o-mini').sort((a, b) => Number(a.attributes['hermes.step']) - Number(b.attributes['hermes.step']));
    expect(chats).toHaveLength(2);
    const system = JSON.parse(String(chats[0]!.attributes['gen_ai.system_instructions'])) as Array<{ type: string; content: string }>;
    expect(system[0]!.type).toBe('text');
    expect(system[0]!.content.length).toBeGreaterThan(20);
    const firstInput = JSON.parse(String(chats[0]!.attributes['gen_ai.input.messages'])) as Array<{ role: string; parts: Array<{ content?: string }> }>;
    expect(firstInput.at(-1)).toEqual({ role: 'user', parts: [{ type: 'text', content: 'please read my note, my token is [redacted]' }] });
    expect(JSON.parse(String(chats[0]!.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'n1', name: 'read_note', arguments: { which: 'the one with [redacted]' } }], finish_reason: 'tool_calls' },
    ]);
    // The second call saw the tool's answer, redacted as well.
    const secondInput = JSON.parse(String(chats[1]!.attributes['gen_ai.input.messages'])) as Array<{ role: string; parts: Array<Record<string, unknown>> }>;
    expect(secondInput.at(-1)).toEqual({ role: 'tool', parts: [{ type: 'tool_call_response', id: 'n1', response: 'the deploy key is [redacted]' }] });

    const [tool] = byName(spans, 'execute_tool read_note');
    expect(JSON.parse(String(tool!.attributes['gen_ai.tool.call.arguments']))).toEqual({ which: 'the one with [redacted]' });
    expect(tool!.attributes['gen_ai.tool.call.result']).toBe('the deploy key is [redacted]');
  });

  it('marks a failed model call and its turn as errors', async () => {
    collector = await startFakeCollector();
    h = await startHarness({ env: otelEnv(collector, { OTEL_SERVICE_NAME: 'hermes-staging' }) });
    h.fake.enqueue({ status: 400, body: { error: { message: 'bad request from the test', type: 'invalid_request_error' } } });
    await runTurn(h, 'hello');
    const spans = await collector.waitFor((s) => turnSpans(s).length === 1);
    const [turn] = turnSpans(spans);
    const [chat] = byName(spans, 'chat gpt-4o-mini');
    expect(chat!.status.code).toBe(2);
    expect(chat!.attributes['error.type']).toBe('permanent');
    expect(chat!.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    expect(turn!.status.code).toBe(2);
    expect(turn!.attributes['error.type']).toBe('model_error:permanent');
    expect(turn!.resource['service.name']).toBe('hermes-staging');
  });

  it('a collector that is down never breaks or holds up a turn, and is logged once', async () => {
    // A port that was just free: nothing listens there.
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));

    const lines: Array<{ msg: string; level: number }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { msg: string; level: number });
        done();
      },
    });
    h = await startHarness({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '500' }, core: { log: pino({ level: 'info' }, sink) } });
    h.fake.enqueue({ text: 'first answer' }, { text: 'second answer' });

    const started = Date.now();
    expect(await runTurn(h, 'one')).toBe('first answer');
    expect(await runTurn(h, 'two')).toBe('second answer');
    // Each flush is bounded by the export timeout (500 ms) plus a second, whatever the collector does.
    expect(Date.now() - started).toBeLessThan(2 * 1500 + 2000);

    const failures = lines.filter((l) => l.msg.startsWith('OpenTelemetry export failed'));
    expect(failures).toHaveLength(1);
    expect(failures[0]!.level).toBe(40);
    // The turn's own trace file is untouched by the export failing.
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(`${h.dataDir}/traces`)).length).toBe(1);
  });

  it('a collector that accepts and never answers costs a turn nothing', async () => {
    const hanging = http.createServer(() => {
      // never answers
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    closers.push(async () => {
      hanging.closeAllConnections();
      await new Promise<void>((r) => hanging.close(() => r()));
    });
    const { port } = hanging.address() as AddressInfo;
    h = await startHarness({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '300' } });
    h.fake.enqueue({ text: 'answered anyway' });
    const started = Date.now();
    await h.core.gateway.handleMessage(msg('hi'));
    expect((await h.port.waitFor(isText)).text).toBe('answered anyway');
    const answeredAfter = Date.now() - started;
    await h.core.flushTraces();
    expect(Date.now() - started).toBeLessThan(answeredAfter + 300 + 1000 + 500);
  });
});
