import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';

let fake: FakeOpenAI;
let client: OpenAI;

beforeEach(async () => {
  fake = await startFakeOpenAI();
  client = new OpenAI({ apiKey: 'test-key', baseURL: fake.url, maxRetries: 0, timeout: 5_000 });
});
afterEach(() => fake.close());

describe('fake OpenAI server with the real SDK', () => {
  it('answers "ok" by default, records the request and reports usage', async () => {
    const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.choices[0]?.message.content).toBe('ok');
    expect(r.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.messages[0]).toEqual({ role: 'user', content: 'hi' });
  });

  it('serves the queue first, then the handler with a call index', async () => {
    fake.enqueue({ text: 'first', usage: { prompt_tokens: 7, completion_tokens: 3 } });
    fake.setHandler((_req, i) => ({ text: `handler ${i}` }));
    const a = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const b = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(a.choices[0]?.message.content).toBe('first');
    expect(a.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    expect(b.choices[0]?.message.content).toBe('handler 1');
  });

  it('returns tool calls with given ids and object arguments encoded as JSON', async () => {
    fake.enqueue({ toolCalls: [{ name: 'calculator', arguments: { expression: '1+1' }, id: 'call_A' }, { name: 'get_current_time', arguments: '{}' }] });
    const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const calls = r.choices[0]?.message.tool_calls ?? [];
    expect(r.choices[0]?.finish_reason).toBe('tool_calls');
    expect(calls.map((c) => c.id)[0]).toBe('call_A');
    expect(calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : null))).toEqual([
      ['calculator', '{"expression":"1+1"}'],
      ['get_current_time', '{}'],
    ]);
  });

  it('streams text and tool-call deltas that the SDK reassembles, with a final usage chunk', async () => {
    fake.enqueue({ toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }], text: 'let me compute' });
    const stream = client.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    const msg = final.choices[0]?.message;
    expect(msg?.content).toBe('let me compute');
    const call = msg?.tool_calls?.[0];
    expect(call?.type === 'function' && call.function.arguments).toBe('{"expression":"6*7"}');
    expect(final.usage?.completion_tokens).toBeGreaterThan(0);
    expect(fake.requests[0]?.stream).toBe(true);
  });

  it('sends error statuses with headers and bodies', async () => {
    fake.enqueue({ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down', type: 'rate_limit', code: 'rate_limit_exceeded' } } });
    const err = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.status).toBe(429);
    expect(apiErr.headers?.get('retry-after')).toBe('1');
    expect(apiErr.message).toContain('slow down');
  });

  it('returns malformed tool-call arguments verbatim', async () => {
    fake.enqueue({ malformedToolCall: true, name: 'fetch_url' });
    const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const call = r.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function.name).toBe('fetch_url');
    expect(() => JSON.parse(call?.type === 'function' ? call.function.arguments : '')).toThrow();
  });

  it('hangs until the client times out, and close() still finishes', async () => {
    fake.enqueue({ hang: true });
    const slow = new OpenAI({ apiKey: 'k', baseURL: fake.url, maxRetries: 0, timeout: 200 });
    const started = Date.now();
    const err = await slow.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('close() cuts a request that is still hanging', async () => {
    fake.enqueue({ hang: true });
    const pending = client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).then(() => 'answered', () => 'failed');
    for (let i = 0; i < 200 && fake.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(fake.requests).toHaveLength(1);
    const started = Date.now();
    await fake.close();
    expect(await pending).toBe('failed');
    expect(Date.now() - started).toBeLessThan(1_000);
    fake = await startFakeOpenAI(); // afterEach closes it
  });

  it('lists models and adds configured latency', async () => {
    const models = await client.models.list();
    expect(models.data[0]?.id).toBe('fake-model');
    fake.setLatency(120);
    const started = Date.now();
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });
});
