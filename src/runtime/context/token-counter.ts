import { createRequire } from 'node:module';
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';
import type { ChatMessage } from '../../basics/types.js';
import type { ToolSpec } from '../provider/provider.js';

/**
 * Token counting for the prompt budget (HERMES_CONTEXT_TOKENS).
 *
 * - OpenAI models get their real BPE: o200k_base for gpt-4o, gpt-4.1, gpt-4.5, gpt-5, gpt-oss and
 *   the o-series; cl100k_base for gpt-4 / gpt-4-turbo / gpt-3.5 and the v3 embeddings.
 * - Any other model (Llama, Qwen, Hermes, Mistral… behind Ollama or vLLM) gets an estimate that is
 *   deliberately on the high side, because we cannot load its tokenizer and overshooting the
 *   server's context is a hard error while undershooting only wastes a little room:
 *   ASCII characters / 3.5 plus one token per non-ASCII UTF-16 unit (CJK, emoji).
 */
export type TokenEncodingName = 'o200k_base' | 'cl100k_base' | 'estimate';

export interface TokenCounter {
  readonly encoding: TokenEncodingName;
  count(text: string): number;
  /** One message with its framing (role, separators, tool-call names and arguments). */
  countMessage(message: ChatMessage): number;
  /** A whole request's messages, including the tokens that prime the reply. */
  countMessages(messages: ChatMessage[]): number;
  countTools(specs: ToolSpec[]): number;
}

/** OpenAI's documented framing: ~3 tokens per message plus 3 priming the reply; we round up. */
export const MESSAGE_OVERHEAD = 4;
export const REPLY_PRIMING = 3;
export const TOOL_CALL_OVERHEAD = 4;
export const TOOL_SPEC_OVERHEAD = 8;

/**
 * Counts are cached by content: a session's history is recounted before every model call, and the
 * store hands back new string objects each time. Bounded by total characters held (~40 MB).
 */
const CACHE_MAX_CHARS = 20_000_000;
const CACHE_MAX_ENTRIES = 100_000;

export function encodingForModelName(model: string): TokenEncodingName {
  // OpenRouter-style "openai/gpt-4o" and Azure-style deployment names keep the model after a slash.
  const name = model.trim().toLowerCase().split('/').pop() ?? '';
  if (/^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o[134](-|$))/.test(name)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada-002)/.test(name)) return 'cl100k_base';
  return 'estimate';
}

const encoders = new Map<'o200k_base' | 'cl100k_base', Tiktoken>();
// The rank tables are megabytes of JavaScript: loaded on first use, not at start. Short
// conversations never need them (context-window.ts fits them by a byte bound).
const require = createRequire(import.meta.url);
const loadRanks = (name: 'o200k_base' | 'cl100k_base'): TiktokenBPE => {
  const mod = require(`js-tiktoken/ranks/${name}`) as TiktokenBPE & { default?: TiktokenBPE };
  return mod.default ?? mod;
};

function encoderFor(name: 'o200k_base' | 'cl100k_base'): Tiktoken {
  let enc = encoders.get(name);
  if (!enc) {
    // Building the rank table takes ~0.5 s; do it once per process and per encoding.
    enc = new Tiktoken(loadRanks(name));
    encoders.set(name, enc);
  }
  return enc;
}

export function estimateTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 128) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 3.5 + other);
}

/**
 * js-tiktoken's merge step is quadratic in the length of one pre-tokenised piece: 8,000 "x" in a row
 * take ~6 s. Long runs of letters (also CJK text without spaces), of punctuation or of whitespace are
 * therefore counted in short chunks; splitting a piece can only add tokens at the cuts, so the
 * count errs high, never low, on such text.
 */
const LONG_RUN = /[\p{L}\p{M}]{64,}|[^\s\p{L}\p{N}]{64,}|\s{64,}/gu;
const RUN_CHUNK = 32;

function countBpe(enc: Tiktoken, text: string): number {
  // Empty allowed/disallowed lists: "<|endoftext|>" typed by a user is counted as plain text.
  const len = (s: string) => (s ? enc.encode(s, [], []).length : 0);
  let n = 0;
  let last = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    n += len(text.slice(last, m.index));
    const run = m[0];
    let i = 0;
    while (i < run.length) {
      let end = Math.min(i + RUN_CHUNK, run.length);
      if (end < run.length && /[\uD800-\uDBFF]/.test(run.charAt(end - 1))) end -= 1; // keep surrogate pairs whole
      n += len(run.slice(i, end));
      i = end;
    }
    last = m.index + run.length;
  }
  return n + len(text.slice(last));
}

export function createTokenCounter(model: string): TokenCounter {
  const encoding = encodingForModelName(model);
  const raw: (text: string) => number =
    encoding === 'estimate'
      ? estimateTokens
      : (text) => countBpe(encoderFor(encoding), text);

  const cache = new Map<string, number>();
  let cachedChars = 0;
  // The registry hands out the same spec objects while a tool is unchanged.
  const specCounts = new WeakMap<ToolSpec, number>();
  function count(text: string): number {
    if (!text) return 0;
    const hit = cache.get(text);
    if (hit !== undefined) return hit;
    const n = raw(text);
    if (text.length > CACHE_MAX_CHARS / 10) return n;
    // Map iterates in insertion order: dropping the first entries is a cheap FIFO eviction.
    for (const oldest of cache.keys()) {
      if (cachedChars + text.length <= CACHE_MAX_CHARS && cache.size < CACHE_MAX_ENTRIES) break;
      cache.delete(oldest);
      cachedChars -= oldest.length;
    }
    cache.set(text, n);
    cachedChars += text.length;
    return n;
  }

  function countMessage(m: ChatMessage): number {
    let n = MESSAGE_OVERHEAD;
    switch (m.role) {
      case 'system':
        return n + count(m.content);
      case 'user':
        // Shared sessions tag the speaker into the request; count the name so tagging never overflows.
        if (m.speaker) n += count(m.speaker.displayName ?? m.speaker.userId) + 2;
        return n + count(m.content);
      case 'assistant':
        n += count(m.content ?? '');
        for (const call of m.toolCalls ?? []) n += TOOL_CALL_OVERHEAD + count(call.id) + count(call.name) + count(call.arguments);
        return n;
      case 'tool':
        return n + count(m.toolCallId) + count(m.content);
    }
  }

  return {
    encoding,
    count,
    countMessage,
    countMessages(messages) {
      let n = REPLY_PRIMING;
      for (const m of messages) n += countMessage(m);
      return n;
    },
    countTools(specs) {
      let n = 0;
      for (const s of specs) {
        let c = specCounts.get(s);
        if (c === undefined) {
          c = TOOL_SPEC_OVERHEAD + count(s.name) + count(s.description) + count(JSON.stringify(s.parameters));
          specCounts.set(s, c);
        }
        n += c;
      }
      return n;
    },
  };
}
