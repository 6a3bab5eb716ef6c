import { SUMMARY_SEARCH_NOTE } from './summarizer.js';
import type { ChatMessage } from '../../basics/types.js';
import { MESSAGE_OVERHEAD, REPLY_PRIMING, TOOL_CALL_OVERHEAD, type TokenCounter } from './token-counter.js';
import { pairToolMessages, splitTurns } from './turns.js';
import { IMAGE_TOKENS, withoutImages } from '../vision/prompt-images.js';
import { IMAGE_NOTES } from '../vision/image-notes.js';

/**
 * Fits one model request into the prompt budget (HERMES_CONTEXT_TOKENS). Pure.
 *
 * Measures, in this order, each only as far as needed:
 *  1. tool results (and long tool-call arguments) of earlier turns become a short stub (oldest first);
 *  2. the oldest whole turns move out into `overflow` (the caller folds them into the running
 *     summary), after which stubs are restored, newest first, where room allows;
 *  3. tool results and long tool-call arguments of the latest turn become stubs too (oldest first);
 *  4. the latest user message is truncated, with a marker saying so.
 * If the system prompt, summary and tools alone exceed the budget, `fits` is false.
 *
 * Invariants: the system prompt is always first; a tool call and its result are kept or dropped
 * together and results directly follow their call; the kept history never starts with a tool
 * message; the latest user message is kept; `overflow` is a prefix of `history` made of whole turns;
 * `tokens <= budgetTokens` whenever `fits`.
 */
export interface FitInput {
  system: string;
  summary?: string;
  /** The session's messages after summarizedUpTo, oldest first. */
  history: ChatMessage[];
  budgetTokens: number;
  /** Tokens the tool definitions take in the request. */
  toolsTokens: number;
  counter: TokenCounter;
  /** Besides the latest turn's, how many of the most recent tool results step 1 leaves intact (default 0). */
  keepRecentToolResults?: number;
  /** Only try the byte bound: answer `fits: false` (nothing trimmed) when it does not fit. */
  byteBoundOnly?: boolean;
}

export interface FitResult {
  /** The system message (summary folded into it) followed by the kept history. */
  messages: ChatMessage[];
  /**
   * Prompt tokens of `messages` plus the tools: exact when anything had to be trimmed; when the
   * UTF-8 byte bound already fit, that bound (never below the exact count).
   */
  tokens: number;
  stubbedToolResults: number;
  /** Oldest messages that did not fit and belong in the running summary: a prefix of `history`. */
  overflow: ChatMessage[];
  fits: boolean;
}

export const SUMMARY_HEADING = '## Summary of the earlier conversation';

export function toolResultStub(chars: number): string {
  return `[tool result removed to save space: ${chars} chars]`;
}

/** Stands in for long tool-call arguments that no longer fit (valid JSON, as the call must stay parseable). */
export function toolArgsStub(chars: number): string {
  return JSON.stringify({ removed: `arguments removed to save space: ${chars} chars` });
}

/** Arguments shorter than this are left alone: a stub would save nothing. */
const ARGS_STUB_MIN_CHARS = 200;

export function truncationMarker(kept: number, total: number): string {
  return `\n[message truncated to fit the context window: kept ${kept} of ${total} characters]`;
}

/**
 * The summary joins the system prompt instead of being a second system message: several chat
 * templates (Llama, Qwen under vLLM/Ollama) reject or silently drop a second system message.
 */
export function systemWithSummary(system: string, summary?: string): ChatMessage {
  const s = summary?.trim();
  return { role: 'system', content: s ? `${system}\n\n${SUMMARY_HEADING}\n${SUMMARY_SEARCH_NOTE}\n${s}` : system };
}

interface Entry {
  msg: ChatMessage;
  cost: number;
  /** The original tool message while a stub stands in for it. */
  original?: { msg: ChatMessage; cost: number };
}

/**
 * A byte-level BPE token covers at least one UTF-8 byte, so bytes (plus the framing overheads)
 * bound the token count from above. When that bound fits, nothing needs tokenizing: most
 * requests of a short conversation take this path, which keeps the loop's overhead low.
 */
function upperBoundTokens(messages: ChatMessage[]): number {
  let n = REPLY_PRIMING;
  for (const m of messages) {
    n += MESSAGE_OVERHEAD;
    if (m.role === 'assistant') {
      n += Buffer.byteLength(m.content ?? '');
      for (const c of m.toolCalls ?? []) n += TOOL_CALL_OVERHEAD + Buffer.byteLength(c.id) + Buffer.byteLength(c.name) + Buffer.byteLength(c.arguments);
    } else if (m.role === 'tool') {
      n += Buffer.byteLength(m.toolCallId) + Buffer.byteLength(m.content) + IMAGE_TOKENS * (m.images?.length ?? 0);
    } else {
      n += Buffer.byteLength(m.content);
      if (m.role === 'user') n += IMAGE_TOKENS * (m.images?.length ?? 0);
      if (m.role === 'user' && m.speaker) n += Buffer.byteLength(m.speaker.displayName ?? m.speaker.userId) + 2;
    }
  }
  return n;
}

export function fitContext(input: FitInput): FitResult {
  const { counter, budgetTokens: budget } = input;
  const system = systemWithSummary(input.system, input.summary);
  const paired = splitTurns(input.history).flatMap((t) => pairToolMessages(t.messages));
  const bound = upperBoundTokens([system, ...paired]) + input.toolsTokens;
  if (bound <= budget) {
    return { messages: [system, ...paired], tokens: bound, stubbedToolResults: 0, overflow: [], fits: true };
  }
  if (input.byteBoundOnly) return { messages: [system, ...paired], tokens: bound, stubbedToolResults: 0, overflow: [], fits: false };
  const turns = splitTurns(input.history).map((t) => ({
    start: t.start,
    entries: pairToolMessages(t.messages).map((msg): Entry => ({ msg, cost: counter.countMessage(msg) })),
  }));
  let total = counter.countMessages([system]) + input.toolsTokens;
  for (const t of turns) for (const e of t.entries) total += e.cost;
  let first = 0; // index of the oldest kept turn
  const last = turns.length - 1;
  const over = () => total > budget;

  const stub = (e: Entry): void => {
    if (e.original) return;
    let msg: ChatMessage;
    if (e.msg.role === 'tool') {
      const { images: _shown, ...rest } = e.msg;
      msg = { ...rest, content: toolResultStub(e.msg.content.length) };
    } else if (e.msg.role === 'user' && e.msg.images?.length) msg = withoutImages(e.msg, e.msg.images, IMAGE_NOTES.leftOut);
    else if (e.msg.role === 'assistant' && e.msg.toolCalls?.some((c) => c.arguments.length >= ARGS_STUB_MIN_CHARS)) {
      msg = { ...e.msg, toolCalls: e.msg.toolCalls.map((c) => (c.arguments.length >= ARGS_STUB_MIN_CHARS ? { ...c, arguments: toolArgsStub(c.arguments.length) } : c)) };
    } else return;
    const cost = counter.countMessage(msg);
    if (cost >= e.cost) return;
    total -= e.cost - cost;
    e.original = { msg: e.msg, cost: e.cost };
    e.msg = msg;
    e.cost = cost;
  };

  // 1. Stub tool results (and images) of earlier turns, oldest first, sparing the most recent few.
  if (over() && last > 0) {
    const earlier = turns.slice(0, last).flatMap((t) => t.entries.filter((e) => e.msg.role === 'tool' || e.msg.role === 'assistant' || (e.msg.role === 'user' && e.msg.images?.length)));
    const spare = Math.max(0, input.keepRecentToolResults ?? 0);
    const candidates = earlier.slice(0, Math.max(0, earlier.length - spare));
    for (const e of candidates) {
      if (!over()) break;
      stub(e);
    }
  }

  // 2. Move the oldest whole turns out, then give room back to the newest stubs.
  while (over() && first < last) {
    for (const e of turns[first]!.entries) total -= e.cost;
    first++;
  }
  const kept = turns.slice(first);
  const keptEntries = kept.flatMap((t) => t.entries);
  for (let i = keptEntries.length - 1; i >= 0; i--) {
    const e = keptEntries[i]!;
    if (!e.original || total + (e.original.cost - e.cost) > budget) continue;
    total += e.original.cost - e.cost;
    e.msg = e.original.msg;
    e.cost = e.original.cost;
    e.original = undefined;
  }

  // 3. Only the latest turn is left and it is still too big: stub its tool results too.
  const latest = kept[kept.length - 1];
  if (over() && latest) {
    for (const e of latest.entries) {
      if (!over()) break;
      stub(e);
    }
  }

  // 4. Last resort: shorten the latest user message rather than fail the turn.
  if (over() && latest) {
    const e = [...latest.entries].reverse().find((x) => x.msg.role === 'user');
    if (e && e.msg.role === 'user') {
      const room = budget - (total - e.cost);
      const msg = truncateToFit(e.msg, room, counter);
      const cost = counter.countMessage(msg);
      // A short message cut to nothing plus the marker would only grow: then leave it whole.
      if (cost < e.cost) {
        total += cost - e.cost;
        e.msg = msg;
        e.cost = cost;
      }
    }
  }

  const messages: ChatMessage[] = [system, ...keptEntries.map((e) => e.msg)];
  const tokens = counter.countMessages(messages) + input.toolsTokens;
  return {
    messages,
    tokens,
    stubbedToolResults: keptEntries.filter((e) => e.original).length,
    overflow: input.history.slice(0, kept[0]?.start ?? input.history.length),
    fits: tokens <= budget,
  };
}

/** Longest prefix of the content that, with the marker, fits `room` tokens (binary search: O(log n) counts). */
function truncateToFit(
  msg: Extract<ChatMessage, { role: 'user' }>,
  room: number,
  counter: TokenCounter,
): Extract<ChatMessage, { role: 'user' }> {
  const full = msg.content;
  const withPrefix = (k: number) => ({ ...msg, content: full.slice(0, k) + truncationMarker(k, full.length) });
  let lo = 0;
  let hi = full.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (counter.countMessage(withPrefix(mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  // Never end on half a surrogate pair.
  const k = lo > 0 && /[\uD800-\uDBFF]/.test(full.charAt(lo - 1)) ? lo - 1 : lo;
  return withPrefix(k);
}
