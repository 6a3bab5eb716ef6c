import OpenAI from 'openai';
import { callSignal } from './call-signal.js';

/**
 * Vectors for texts from the model server's OpenAI-compatible `/embeddings` (HERMES_EMBEDDING_MODEL).
 * One request per call, bounded in time; the caller batches and decides what a failure means
 * (search falls back to keywords, nothing else waits on it).
 */
export interface Embedder {
  readonly model: string;
  /** One vector per text, in order. Rejects on a failed or malformed answer. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

export interface EmbedderOptions {
  apiKey: string;
  baseURL?: string;
  model: string;
  /** One request's limit. */
  timeoutMs: number;
}

/** Longest text sent for one vector: embedding models read a few thousand tokens at most. */
export const MAX_EMBED_CHARS = 4_000;

export function createEmbedder(opts: EmbedderOptions): Embedder {
  const client = new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseURL, maxRetries: 0, timeout: opts.timeoutMs });
  return {
    model: opts.model,
    async embed(texts, signal) {
      if (texts.length === 0) return [];
      // The caller's signal (the embedding queue's) lives as long as the process: see call-signal.ts.
      const { controller: call, unlink } = callSignal(signal);
      let res;
      try {
        // `float` asked for explicitly: the SDK's default (base64) is not understood by every compatible server.
        res = await client.embeddings.create({ model: opts.model, input: texts.map((t) => t.slice(0, MAX_EMBED_CHARS)), encoding_format: 'float' }, { signal: call.signal });
      } finally {
        unlink();
      }
      const out: Float32Array[] = new Array(texts.length);
      for (const d of res.data ?? []) {
        if (typeof d.index === 'number' && d.index >= 0 && d.index < texts.length && Array.isArray(d.embedding)) out[d.index] = Float32Array.from(d.embedding);
      }
      const dims = out[0]?.length ?? 0;
      if (dims === 0 || out.some((v, i) => v === undefined || v.length !== dims || i >= texts.length)) {
        throw new Error(`the embeddings answer had ${res.data?.length ?? 0} vectors for ${texts.length} texts, or vectors of different sizes`);
      }
      return out;
    },
  };
}
