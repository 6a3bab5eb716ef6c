import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { createOpenAIProvider, type OpenAIProviderOptions } from '../../src/runtime/provider/openai-provider.js';
import { ModelError, type ModelProvider, type ToolSpec } from '../../src/runtime/provider/provider.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { waitFor } from '../helpers/wait-for.js';

const API_KEY = FAKE_OPENAI_KEY;
let fake: FakeOpenAI;
let logLines: string[];
let waits: number[];

beforeEach(async () => {
  fake = await startFakeOpenAI();
  logLines = [];
  waits = [];
});
afterEach(() => fake.close());

function provider(over: Partial<OpenAIProviderOptions> = {}): ModelProvider {
  return createOpenAIProvider({
    apiKey: API_KEY,
    baseURL: fake.url,
    model: 'test-model',
    temperature: 0.2,
    maxTokens: 256,
    timeoutMs: 5_000,
    maxRetries: 2,
    toolMode: 'native',
    log: createLogger('debug', { write: (s: string) => void logLines.push(s) }),
    sleep: async (ms) => void waits.push(ms),
    random: () => 0,
    ...over,
  });
}

const user = (content: string): ChatMessage[] => [{ role: 'system', content: 'You are a test.' }, { role: 'user', content }];
const calculator: ToolSpec = { name: 'calculator', description: 'Evaluates math.', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } };

async function failure(p: Promise<unknown>): Promise<ModelError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ModelError);
  return err as ModelError;
}

describe('OpenAI provider against the fake server', () => {
  it('returns a plain answer with usage and sends our settings', async () => {
    fake.enqueue({ text: 'Hello there', usage: { prompt_tokens: 11, completion_tokens: 2 } });
    const r = await provider().complete({ messages: user('hi'), tools: [] });
    expect(r).toMatchObject({ content: 'Hello there', toolCalls: [], parseErrors: [], usage: { promptTokens: 11, completionTokens: 2 }, finishReason: 'stop', model: 'test-model' });
    const body = fake.requests[0]!;
    expect(body).toMatchObject({ model: 'test-model', temperature: 0.2, max_tokens: 256 });
    expect(body.tools).toBeUndefined();
    expect(body.messages).toEqual([{ role: 'system', content: 'You are a test.' }, { role: 'user', content: 'hi' }]);
  });

  it('sends tools, returns native tool calls with their ids, and maps the history back', async () => {
    fake.enqueue({ toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' }, id: 'call_abc' }] }, { text: '42' });
    const p = provider();
    const first = await p.complete({ messages: user('6*7?'), tools: [calculator] });
    expect(first.toolCalls).toEqual([{ id: 'call_abc', name: 'calculator', arguments: '{"expression":"6*7"}' }]);
    expect(fake.requests[0]?.tools).toEqual([{ type: 'function', function: { name: 'calculator', description: 'Evaluates math.', parameters: calculator.parameters } }]);
    const history: ChatMessage[] = [...user('6*7?'), { role: 'assistant', content: null, toolCalls: first.toolCalls }, { role: 'tool', toolCallId: 'call_abc', name: 'calculator', content: '42' }];
    const second = await p.complete({ messages: history, tools: [calculator], maxTokens: 50 });
    expect(second.content).toBe('42');
    expect(fake.requests[1]?.max_tokens).toBe(50);
    expect(fake.requests[1]?.messages.slice(2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'calculator', arguments: '{"expression":"6*7"}' } }] },
      { role: 'tool', tool_call_id: 'call_abc', content: '42' },
    ]);
  });

  it('unwraps double-encoded native arguments', async () => {
    fake.enqueue({ toolCalls: [{ name: 'calculator', arguments: JSON.stringify(JSON.stringify({ expression: '1' })) }] });
    const r = await provider().complete({ messages: user('x'), tools: [calculator] });
    expect(r.toolCalls[0]?.arguments).toBe('{"expression":"1"}');
  });

  it('returns a malformed tool call with its raw arguments instead of throwing', async () => {
    fake.enqueue({ malformedToolCall: true, name: 'calculator' });
    const r = await provider().complete({ messages: user('x'), tools: [calculator] });
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0]?.name).toBe('calculator');
    expect(() => JSON.parse(r.toolCalls[0]!.arguments)).toThrow();
  });

  it('sends broken arguments from the history wrapped in valid JSON, so strict servers accept it', async () => {
    const history: ChatMessage[] = [...user('x'), { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression": "1+' }] }, { role: 'tool', toolCallId: 'c1', name: 'calculator', content: 'Error: not valid JSON' }];
    await provider().complete({ messages: history, tools: [calculator] });
    const assistant = fake.requests[0]?.messages[2];
    expect(assistant?.role === 'assistant' && assistant.tool_calls?.[0]).toMatchObject({ id: 'c1', function: { name: 'calculator', arguments: JSON.stringify({ invalid_json_arguments: '{"expression": "1+' }) } });
  });

  it('reads Hermes <tool_call> tags in native mode and strips them from the content', async () => {
    fake.enqueue({ text: 'Checking.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+2"}}\n</tool_call>' });
    const r = await provider().complete({ messages: user('x'), tools: [calculator] });
    expect(r.content).toBe('Checking.');
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0]).toMatchObject({ name: 'calculator', arguments: '{"expression":"2+2"}' });
    expect(r.toolCalls[0]?.id).toMatch(/^call_[0-9a-f]+$/);
  });

  it('reads a bare {"name", "parameters"} answer naming an offered tool, but not other JSON', async () => {
    fake.enqueue({ text: '{"name": "calculator", "parameters": {"expression": "3*3"}}' }, { text: '{"name": "Ada"}' });
    const p = provider();
    const r = await p.complete({ messages: user('x'), tools: [calculator] });
    expect(r.toolCalls.map((c) => [c.name, c.arguments])).toEqual([['calculator', '{"expression":"3*3"}']]);
    expect(r.content).toBeNull();
    const plain = await p.complete({ messages: user('x'), tools: [calculator] });
    expect(plain).toMatchObject({ content: '{"name": "Ada"}', toolCalls: [] });
  });

  it('waits as retry-after says on 429 and then succeeds', async () => {
    fake.enqueue({ status: 429, headers: { 'retry-after': '2' }, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } } });
    fake.enqueue({ status: 429, headers: { 'retry-after-ms': '150' } });
    fake.enqueue({ text: 'finally' });
    const r = await provider().complete({ messages: user('x'), tools: [] });
    expect(r.content).toBe('finally');
    expect(waits).toEqual([2000, 150]);
    expect(fake.requests).toHaveLength(3);
  });

  it('caps a huge retry-after at 30 s', async () => {
    fake.enqueue({ status: 503, headers: { 'retry-after': '3600' } }, { text: 'ok' });
    await provider().complete({ messages: user('x'), tools: [] });
    expect(waits).toEqual([30_000]);
  });

  it('backs off after a 500 and succeeds', async () => {
    fake.enqueue({ status: 500 }, { text: 'recovered' });
    const r = await provider().complete({ messages: user('x'), tools: [] });
    expect(r.content).toBe('recovered');
    expect(waits).toEqual([250]);
  });

  it('gives up with a transient error after the configured retries', async () => {
    fake.setHandler(() => ({ status: 502, body: { error: { message: 'bad gateway' } } }));
    const err = await failure(provider({ maxRetries: 3 }).complete({ messages: user('x'), tools: [] }));
    expect(err.kind).toBe('transient');
    expect(err.message).toContain('after 4 attempts');
    expect(err.message).toContain('502');
    expect(fake.requests).toHaveLength(4);
    expect(waits).toEqual([250, 500, 1000]);
  });

  it('treats 401 as permanent without retrying and never logs the key', async () => {
    fake.enqueue({ status: 401, body: { error: { message: `Incorrect API key provided: ${API_KEY}`, type: 'invalid_request_error', code: 'invalid_api_key' } } });
    const err = await failure(provider().complete({ messages: user('x'), tools: [] }));
    expect(err.kind).toBe('permanent');
    expect(err.status).toBe(401);
    expect(err.message).toContain('OPENAI_API_KEY');
    expect(fake.requests).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(API_KEY);
    expect(err.message).not.toContain(API_KEY);
  });

  it('treats an exhausted quota (429 insufficient_quota) as permanent', async () => {
    fake.enqueue({ status: 429, body: { error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' } } });
    const err = await failure(provider().complete({ messages: user('x'), tools: [] }));
    expect(err.kind).toBe('permanent');
    expect(err.message).toContain('quota');
    expect(fake.requests).toHaveLength(1);
  });

  it('names the model on a 404', async () => {
    fake.enqueue({ status: 404, body: { error: { message: 'The model `test-model` does not exist', code: 'model_not_found' } } });
    const err = await failure(provider().complete({ messages: user('x'), tools: [] }));
    expect(err).toMatchObject({ kind: 'permanent', status: 404 });
    expect(err.message).toMatch(/"test-model".*HERMES_MODEL/);
  });

  it('times out a hanging server within the configured time, without retrying', async () => {
    fake.enqueue({ hang: true });
    const started = Date.now();
    const err = await failure(provider({ timeoutMs: 300 }).complete({ messages: user('x'), tools: [] }));
    const elapsed = Date.now() - started;
    expect(err.kind).toBe('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2_000);
    expect(fake.requests).toHaveLength(1);
  });

  it('reports a cancelled call as aborted', async () => {
    fake.enqueue({ hang: true });
    const controller = new AbortController();
    const call = failure(provider().complete({ messages: user('x'), tools: [], signal: controller.signal }));
    // Cancelled while the request is out, not before it was sent.
    await waitFor('the request at the model server', () => fake.inFlight === 1);
    controller.abort();
    const err = await call;
    expect(err.kind).toBe('aborted');
  });

  it('leaves nothing attached to the turn\'s signal after a call, so a long-lived turn signal keeps no call alive', async () => {
    fake.enqueue({ text: 'one' }, { text: 'two' });
    const controller = new AbortController();
    const p = provider();
    await p.complete({ messages: user('x'), tools: [], signal: controller.signal });
    await p.complete({ messages: user('y'), tools: [], signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('stops waiting between retries when cancelled', async () => {
    fake.enqueue({ status: 503, headers: { 'retry-after': '20' } });
    const controller = new AbortController();
    const p = createOpenAIProvider({ apiKey: API_KEY, baseURL: fake.url, model: 'm', temperature: 0, maxTokens: 10, timeoutMs: 5_000, maxRetries: 2, toolMode: 'native', log: createLogger('silent') });
    const started = Date.now();
    const call = failure(p.complete({ messages: user('x'), tools: [], signal: controller.signal }));
    // Cancelled after the 503 was answered, while the provider waits the 20 s Retry-After.
    await waitFor('the first attempt answered', () => fake.requests.length === 1 && fake.inFlight === 0);
    controller.abort();
    const err = await call;
    expect(err.kind).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fake.requests).toHaveLength(1);
  });

  it('retries connection failures and then reports the server as unavailable', async () => {
    const url = fake.url;
    await fake.close();
    const p = provider({ baseURL: url, maxRetries: 1 });
    const err = await failure(p.complete({ messages: user('x'), tools: [] }));
    expect(err.kind).toBe('transient');
    expect(err.message).toMatch(/connection failed/);
    expect(waits).toHaveLength(1);
    fake = await startFakeOpenAI(); // afterEach closes it
  });

  it('switches to max_completion_tokens when the server refuses max_tokens', async () => {
    fake.enqueue({ status: 400, body: { error: { message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", type: 'invalid_request_error', param: 'max_tokens', code: 'unsupported_parameter' } } });
    const p = provider();
    expect((await p.complete({ messages: user('x'), tools: [] })).content).toBe('ok');
    await p.complete({ messages: user('y'), tools: [] });
    expect(fake.requests.map((r) => [r.max_tokens, r.max_completion_tokens])).toEqual([[256, undefined], [undefined, 256], [undefined, 256]]);
    expect(waits).toEqual([]);
  });

  it('reports other 400s as permanent with the server message', async () => {
    fake.enqueue({ status: 400, body: { error: { message: 'messages: too many' } } });
    const err = await failure(provider().complete({ messages: user('x'), tools: [] }));
    expect(err).toMatchObject({ kind: 'permanent', status: 400 });
    expect(err.message).toContain('messages: too many');
    expect(fake.requests).toHaveLength(1);
  });
});

describe('JSON tool mode against the fake server', () => {
  it('describes tools in the prompt, parses the action, and replays the transcript as text', async () => {
    fake.enqueue(
      { text: 'I will compute.\n```json\n{"thought": "math", "action": "calculator", "action_input": {"expression": "6*7"}}\n```' },
      { text: '{"thought": "done", "final_answer": "It is 42."}' },
    );
    const p = provider({ toolMode: 'json' });
    const first = await p.complete({ messages: user('6*7?'), tools: [calculator] });
    expect(first.toolCalls).toHaveLength(1);
    expect(first.toolCalls[0]).toMatchObject({ name: 'calculator', arguments: '{"expression":"6*7"}' });
    expect(first.content).toBeNull();
    const sent = fake.requests[0]!;
    expect(sent.tools).toBeUndefined();
    const system = sent.messages[0];
    expect(system?.role).toBe('system');
    expect(String(system?.content)).toContain('You are a test.');
    expect(String(system?.content)).toContain('- calculator: Evaluates math.');
    expect(String(system?.content)).toContain('"action_input"');

    const id = first.toolCalls[0]!.id;
    const history: ChatMessage[] = [...user('6*7?'), { role: 'assistant', content: null, toolCalls: first.toolCalls }, { role: 'tool', toolCallId: id, name: 'calculator', content: '42' }];
    const second = await p.complete({ messages: history, tools: [calculator] });
    expect(second).toMatchObject({ content: 'It is 42.', toolCalls: [], parseErrors: [] });
    expect(fake.requests[1]?.messages.slice(2)).toEqual([
      { role: 'assistant', content: '{"action":"calculator","action_input":{"expression":"6*7"}}' },
      { role: 'user', content: `Observation for calculator (call ${id}): 42` },
    ]);
  });

  it('returns malformed JSON actions as parse errors, not exceptions', async () => {
    fake.enqueue({ text: '{"action": "calculator", "action_input": {"expression": "1+1",}' });
    const r = await provider({ toolMode: 'json' }).complete({ messages: user('x'), tools: [calculator] });
    expect(r.toolCalls).toEqual([]);
    expect(r.parseErrors).toHaveLength(1);
  });
});
