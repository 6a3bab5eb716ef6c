import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { summarizeTurns, SUMMARY_MAX_TOKENS } from '../../src/runtime/context/summarizer.js';
import { createOpenAIProvider } from '../../src/runtime/provider/openai-provider.js';
import { createLogger } from '../../src/basics/log.js';
import type { ModelProvider } from '../../src/runtime/provider/provider.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';

let fake: FakeOpenAI;
let provider: ModelProvider;

beforeEach(async () => {
  fake = await startFakeOpenAI();
  provider = createOpenAIProvider({
    apiKey: 'sk-test', baseURL: fake.url, model: 'fake-model', temperature: 0, maxTokens: 1000,
    timeoutMs: 5_000, maxRetries: 0, toolMode: 'native', log: createLogger('silent'),
  });
});
afterEach(async () => {
  await fake.close();
});

const ada = { platform: 'slack' as const, workspaceId: 'T1', userId: 'U1ADA', displayName: 'Ada' };

function userText(body: FakeOpenAI['requests'][number]): string {
  const msg = body.messages.find((m) => m.role === 'user');
  return typeof msg?.content === 'string' ? msg.content : JSON.stringify(msg?.content);
}

describe('summarizeTurns', () => {
  it('makes one tool-less, bounded call with the previous summary, the speakers and clipped tool results', async () => {
    fake.enqueue({ text: '  - Ada asked for the Q3 numbers: revenue 1.2M.  ' });
    const huge = 'row '.repeat(50_000);
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Get the Q3 numbers please', speaker: ada },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'fetch_url', arguments: '{"url":"https://intranet/q3"}' }] },
      { role: 'tool', toolCallId: 'c1', name: 'fetch_url', content: `revenue 1.2M ${huge}` },
      { role: 'assistant', content: 'Q3 revenue was 1.2M.' },
    ];
    const summary = await summarizeTurns(provider, '- Grace owns the deploy checklist.', messages);
    expect(summary).toBe('- Ada asked for the Q3 numbers: revenue 1.2M.');
    expect(fake.requests).toHaveLength(1);
    const body = fake.requests[0]!;
    expect(body.tools ?? []).toEqual([]);
    expect(body.max_tokens ?? body.max_completion_tokens).toBe(SUMMARY_MAX_TOKENS);
    const text = userText(body);
    expect(text).toContain('- Grace owns the deploy checklist.');
    expect(text).toContain('User Ada (slack:U1ADA): Get the Q3 numbers please');
    expect(text).toContain('fetch_url({"url":"https://intranet/q3"})');
    expect(text).toContain('Tool result fetch_url: revenue 1.2M');
    expect(text).toContain('Q3 revenue was 1.2M.');
    expect(text.length).toBeLessThan(10_000); // the 200 KB result was clipped
    const system = body.messages[0];
    expect(system?.role).toBe('system');
    expect(String(system?.content)).toMatch(/who \(which user\) asked/);
  });

  it('keeps the transcript bounded for a very long overflow', async () => {
    fake.enqueue({ text: 'short' });
    const messages: ChatMessage[] = Array.from({ length: 400 }, (_, i) => ({ role: 'user' as const, content: `message ${i} ${'x '.repeat(2_000)}` }));
    await summarizeTurns(provider, undefined, messages);
    const text = userText(fake.requests[0]!);
    expect(text.length).toBeLessThan(45_000);
    expect(text).toContain('(none yet)');
    expect(text).toContain('message 0 ');
    expect(text).toContain('message 99 '); // messages were shrunk evenly, not dropped from the start
  });

  it('throws when the model fails or answers with nothing, so no turns are dropped', async () => {
    fake.enqueue({ status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } });
    await expect(summarizeTurns(provider, undefined, [{ role: 'user', content: 'hi' }])).rejects.toThrow();
    fake.enqueue({ text: '   ' });
    await expect(summarizeTurns(provider, undefined, [{ role: 'user', content: 'hi' }])).rejects.toThrow(/no text/);
  });
});
