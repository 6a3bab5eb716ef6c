import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { createOpenAIProvider, type OpenAIProviderOptions } from '../../src/runtime/provider/openai-provider.js';
import { lazyEmbedder, lazyOpenAIProvider } from '../../src/runtime/provider/lazy-provider.js';
import { ModelError } from '../../src/runtime/provider/provider.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';

// The wrappers main.ts's core uses so that the openai SDK loads at the first model call. They must
// be the real provider and embedder in all but the moment of loading: same answers, same errors.
let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(() => fake.close());

const options = (): OpenAIProviderOptions => ({
  apiKey: FAKE_OPENAI_KEY, baseURL: fake.url, model: 'test-model', temperature: 0.2, maxTokens: 256, timeoutMs: 5_000, maxRetries: 0, toolMode: 'native',
  log: createLogger('silent'),
});
const user = (content: string): ChatMessage[] => [{ role: 'user', content }];

describe('lazyOpenAIProvider', () => {
  it('names its model before any call and answers the calls made before the SDK has loaded, each with its own answer', async () => {
    const provider = lazyOpenAIProvider(options());
    expect(provider.model).toBe('test-model');
    fake.enqueue({ text: 'first' }, { text: 'second' });
    const answers = await Promise.all([provider.complete({ messages: user('one'), tools: [] }), provider.complete({ messages: user('two'), tools: [] })]);
    expect(answers.map((a) => a.content).sort()).toEqual(['first', 'second']);
    fake.enqueue({ text: 'third', usage: { prompt_tokens: 7, completion_tokens: 1 } });
    expect(await provider.complete({ messages: user('three'), tools: [] })).toMatchObject({ content: 'third', usage: { promptTokens: 7, completionTokens: 1 }, model: 'test-model' });
    expect(fake.requests.map((r) => r.model)).toEqual(['test-model', 'test-model', 'test-model']);
  });

  it('fails a call exactly as the provider it stands for does', async () => {
    const refusal = { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } };
    const failure = async (complete: () => Promise<unknown>) => {
      fake.enqueue(refusal);
      const err = await complete().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      const { kind, status, message } = err as ModelError;
      return { kind, status, message };
    };
    const real = await failure(() => createOpenAIProvider(options()).complete({ messages: user('hi'), tools: [] }));
    const lazy = await failure(() => lazyOpenAIProvider(options()).complete({ messages: user('hi'), tools: [] }));
    expect(real).toMatchObject({ kind: 'permanent', status: 401 });
    expect(lazy).toEqual(real);
  });
});

describe('lazyEmbedder', () => {
  it('names its model and embeds through the model server', async () => {
    const embedder = lazyEmbedder({ apiKey: FAKE_OPENAI_KEY, baseURL: fake.url, model: 'embed-test', timeoutMs: 5_000 });
    expect(embedder.model).toBe('embed-test');
    const vectors = await embedder.embed(['a', 'b']);
    expect(vectors).toHaveLength(2);
    expect(vectors[0]!.length).toBeGreaterThan(0);
    expect(fake.embeddingRequests).toHaveLength(1);
    expect(await embedder.embed([])).toEqual([]);
  });
});
