import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/runtime/provider/embedder.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';

let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  await fake.close();
});

describe('embedder', () => {
  it('leaves nothing attached to a long-lived signal after its calls (the embedding queue keeps one for the life of the process)', async () => {
    const embedder = createEmbedder({ apiKey: FAKE_OPENAI_KEY, baseURL: fake.url, model: 'embed-test', timeoutMs: 5_000 });
    const lifetime = new AbortController();
    for (let i = 0; i < 12; i++) {
      const vectors = await embedder.embed([`text ${i}`], lifetime.signal);
      expect(vectors).toHaveLength(1);
    }
    expect(fake.embeddingRequests).toHaveLength(12);
    expect(getEventListeners(lifetime.signal, 'abort')).toHaveLength(0);
  });

  it('is cancelled by the caller\'s signal', async () => {
    const embedder = createEmbedder({ apiKey: FAKE_OPENAI_KEY, baseURL: fake.url, model: 'embed-test', timeoutMs: 5_000 });
    const release = fake.holdEmbeddings();
    const stop = new AbortController();
    const call = embedder.embed(['held'], stop.signal);
    stop.abort();
    await expect(call).rejects.toThrow();
    release();
  });
});
