import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { createOpenAIProvider, type OpenAIProviderOptions } from '../../src/runtime/provider/openai-provider.js';
import { ModelError, type ModelProvider, type ToolSpec } from '../../src/runtime/provider/provider.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';

let fake: FakeOpenAI;
let waits: number[];

beforeEach(async () => {
  fake = await startFakeOpenAI();
  waits = [];
});
afterEach(() => fake.close());

function provider(over: Partial<OpenAIProviderOptions> = {}): ModelProvider {
  return createOpenAIProvider({
    apiKey: FAKE_OPENAI_KEY,
    baseURL: fake.url,
    model: 'test-model',
    temperature: 0.2,
    maxTokens: 256,
    timeoutMs: 5_000,
    maxRetries: 2,
    toolMode: 'native',
    log: createLogger('silent'),
    sleep: async (ms) => void waits.push(ms),
    random: () => 0,
    ...over,
  });
}

const user = (content: string): ChatMessage[] => [{ role: 'system', content: 'You are a test.' }, { role: 'user', content }];
const calculator: ToolSpec = { name: 'calculator', description: 'Evaluates math.', parameters: { type: 'object', properties: { expression: { type: 'string' } } } };
const CALL = '{"name": "calculator", "arguments": {"expression": "2+2"}}';

/** Runs one streamed call; returns the response and the pieces passed on. */
async function streamed(p: ModelProvider, tools: ToolSpec[] = []) {
  const pieces: string[] = [];
  const response = await p.complete({ messages: user('q'), tools, onText: (d) => void pieces.push(d) });
  return { response, pieces };
}

describe('streamed model calls', () => {
  it('asks for a stream with usage, passes text on as it comes, and reports the usage chunk', async () => {
    fake.enqueue({ text: 'Hello there, friend.', usage: { prompt_tokens: 9, completion_tokens: 4 }, stream: { textChunks: ['Hel', 'lo there', ', friend.'] } });
    const { response, pieces } = await streamed(provider());
    expect(fake.requests[0]).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(pieces).toEqual(['Hel', 'lo there', ', friend.']);
    expect(response).toMatchObject({ content: 'Hello there, friend.', toolCalls: [], usage: { promptTokens: 9, completionTokens: 4 }, finishReason: 'stop' });
  });

  it('estimates usage when the server sends no usage chunk', async () => {
    fake.enqueue({ text: 'x'.repeat(40), stream: { omitUsage: true } });
    const { response } = await streamed(provider());
    expect(response.usage.completionTokens).toBe(10);
    expect(response.usage.promptTokens).toBeGreaterThan(0);
  });

  it('assembles native tool-call deltas, and passes the prose beside them', async () => {
    fake.enqueue({ text: 'Let me compute.', toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' }, id: 'c1' }, { name: 'calculator', arguments: { expression: '1+1' }, id: 'c2' }] });
    const { response, pieces } = await streamed(provider(), [calculator]);
    expect(response.toolCalls).toEqual([
      { id: 'c1', name: 'calculator', arguments: '{"expression":"6*7"}' },
      { id: 'c2', name: 'calculator', arguments: '{"expression":"1+1"}' },
    ]);
    expect(pieces.join('')).toBe('Let me compute.');
  });

  it('never passes on Hermes <tool_call> text, however the chunks split the tags', async () => {
    const text = `Checking.\n<tool_call>\n${CALL}\n</tool_call>`;
    const textChunks = ['Check', 'ing.\n<', 'tool_', 'call>\n{"name": "calc', 'ulator", "arguments": {"expression": "2+2"}}\n</tool', '_call>'];
    fake.enqueue({ text, stream: { textChunks } });
    const { response, pieces } = await streamed(provider(), [calculator]);
    expect(response.toolCalls.map((c) => c.name)).toEqual(['calculator']);
    expect(pieces.join('')).toBe('Checking.');
  });

  it('holds a bare JSON call back entirely, and releases JSON that turned out to be an answer at the end', async () => {
    fake.enqueue({ text: CALL, stream: { textChunks: [CALL.slice(0, 5), CALL.slice(5)] } }, { text: '{"a": 1}', stream: { textChunks: ['{"a"', ': 1}'] } });
    const p = provider();
    const call = await streamed(p, [calculator]);
    expect(call.response.toolCalls).toHaveLength(1);
    expect(call.pieces).toEqual([]);
    const answer = await streamed(p, [calculator]);
    expect(answer.response.content).toBe('{"a": 1}');
    expect(answer.pieces.join('')).toBe('{"a": 1}');
  });

  it('in JSON mode shows only the final answer, once it is known, and never an action', async () => {
    const action = '{"thought": "math", "action": "calculator", "action_input": {"expression": "6*7"}}';
    const final = '{"thought": "done", "final_answer": "It is 42."}';
    fake.enqueue({ text: action, stream: { textChunks: [action.slice(0, 20), action.slice(20)] } }, { text: final, stream: { textChunks: [final.slice(0, 30), final.slice(30)] } });
    const p = provider({ toolMode: 'json' });
    const first = await streamed(p, [calculator]);
    expect(first.response.toolCalls.map((c) => c.name)).toEqual(['calculator']);
    expect(first.pieces).toEqual([]);
    const second = await streamed(p, [calculator]);
    expect(second.pieces).toEqual(['It is 42.']);
    expect(fake.requests[1]?.tools).toBeUndefined();
  });

  it('does not pass on the content of an answer whose tool-call text could not be read', async () => {
    fake.enqueue({ text: 'Hm <tool_call>{"name": oops</tool_call>' });
    const { response, pieces } = await streamed(provider(), [calculator]);
    expect(response.parseErrors).toHaveLength(1);
    expect(pieces.join('')).toBe('Hm');
  });

  it('retries a stream that broke off before anything was shown', async () => {
    fake.enqueue({ text: 'first', stream: { breakAfter: { chunks: 1, how: 'event' } } }, { text: 'second try' });
    const { response, pieces } = await streamed(provider());
    expect(response.content).toBe('second try');
    expect(pieces.join('')).toBe('second try');
    expect(fake.requests).toHaveLength(2);
    expect(waits).toHaveLength(1);
  });

  it('does not retry a stream that broke off after text was shown: the error names the break', async () => {
    fake.enqueue({ text: 'Half an answer and', stream: { textChunks: ['Half an ', 'answer and'], breakAfter: { chunks: 2, how: 'drop' } } }, { text: 'never asked for' });
    const pieces: string[] = [];
    const err = await provider().complete({ messages: user('q'), tools: [], onText: (d) => void pieces.push(d) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe('transient');
    expect((err as ModelError).message).toMatch(/broke off/);
    expect(pieces.join('')).toBe('Half an');
    expect(fake.requests).toHaveLength(1);
  });

  it('aborts a hanging stream when the turn is stopped, with the request given up', async () => {
    fake.enqueue({ text: 'Partial answer', stream: { textChunks: ['Partial ', 'answer'], breakAfter: { chunks: 2, how: 'hang' } } });
    const stop = new AbortController();
    const pieces: string[] = [];
    const call = provider().complete({ messages: user('q'), tools: [], signal: stop.signal, onText: (d) => {
      pieces.push(d);
      stop.abort();
    } });
    const err = await call.catch((e: unknown) => e);
    expect((err as ModelError).kind).toBe('aborted');
    expect(pieces).toEqual(['Partial']);
    await expect.poll(() => fake.abandoned).toBe(1);
  });

  it('times out a stream that stalls, like a call that never answers', async () => {
    fake.enqueue({ text: 'stall', stream: { breakAfter: { chunks: 1, how: 'hang' } } });
    const err = await streamed(provider({ timeoutMs: 300 })).catch((e: unknown) => e);
    expect((err as ModelError).kind).toBe('timeout');
  });

  it('drops stream_options once for a server that refuses it', async () => {
    fake.enqueue({ status: 400, body: { error: { message: 'Unrecognized request argument supplied: stream_options', type: 'invalid_request_error' } } }, { text: 'fine' });
    const { response } = await streamed(provider());
    expect(response.content).toBe('fine');
    expect(fake.requests[1]?.stream_options).toBeUndefined();
    expect(fake.requests[1]?.stream).toBe(true);
  });

  it('leaves calls without onText unstreamed', async () => {
    fake.enqueue({ text: 'plain' });
    await provider().complete({ messages: user('q'), tools: [] });
    expect(fake.requests[0]?.stream).toBeUndefined();
  });
});
