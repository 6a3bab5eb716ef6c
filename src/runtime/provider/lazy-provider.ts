/**
 * The openai SDK (a 310 KB chunk of dist/, bundled by scripts/build.mjs) loaded at the first model
 * call instead of at start: a bot is ready, and takes messages, before it has called the model once
 * (the start's model probe is a plain GET, model-probe.ts). Importing the provider's module is what
 * loads the SDK, so these wrappers import it only when a call is made, once, and hand every call to
 * the real provider from then on; errors, retries and messages are the real provider's.
 *
 * A failed import (a damaged build) fails that call and the next call tries again.
 */
import type { OpenAIProviderOptions } from './openai-provider.js';
import type { Embedder, EmbedderOptions } from './embedder.js';
import type { ModelProvider } from './provider.js';

/** createOpenAIProvider(opts), its module imported at the first `complete()`. */
export function lazyOpenAIProvider(opts: OpenAIProviderOptions): ModelProvider {
  const real = once(async () => (await import('./openai-provider.js')).createOpenAIProvider(opts));
  return {
    model: opts.model,
    async complete(request) {
      return (await real()).complete(request);
    },
  };
}

/** createEmbedder(opts), its module imported at the first `embed()`. */
export function lazyEmbedder(opts: EmbedderOptions): Embedder {
  const real = once(async () => (await import('./embedder.js')).createEmbedder(opts));
  return {
    model: opts.model,
    async embed(texts, signal) {
      return (await real()).embed(texts, signal);
    },
  };
}

/** `make` run once and its result shared; a rejection is not kept, so the next caller runs it again. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make().catch((err: unknown) => {
      made = undefined;
      throw err;
    });
    return made;
  };
}
