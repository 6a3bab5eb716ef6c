import type { Logger } from '../../basics/log.js';
import type { ChatMessage } from '../../basics/types.js';
import type { ToolSpec } from '../provider/provider.js';
import { TOOL_SPEC_OVERHEAD, type TokenCounter } from './token-counter.js';
import { fitContext } from './context-window.js';
import { splitTurns } from './turns.js';

/**
 * Before every model call: fit the session into the budget and fold what falls out into the
 * running summary. Turns only leave the raw history once a summary holding them is written
 * (summarizedUpTo advances with it); when the summary call fails they stay, and are retried next
 * time, while this request carries the recent turns that fit. Never throws on a summary failure.
 */
export interface BuildContextInput {
  system: string;
  session: { id: string; summary?: string; summarizedUpTo: number };
  /** The session's full history, oldest first. */
  history: ChatMessage[];
  budgetTokens: number;
  tools: ToolSpec[];
  counter: TokenCounter;
  summarize: (previousSummary: string | undefined, messages: ChatMessage[]) => Promise<string>;
  saveSummary: (summary: string, summarizedUpTo: number) => Promise<void>;
  log: Logger;
}

/** A 200-turn backlog (e.g. after a budget cut) is folded over several calls, not one huge one. */
const MAX_SUMMARY_CALLS = 4;
/** Rough size of one summary call's transcript; tool results are clipped by the summariser. */
const CHUNK_CHARS = 30_000;
const TOOL_CHARS_IN_SUMMARY = 1_500;

function roughChars(m: ChatMessage): number {
  if (m.role === 'tool') return Math.min(m.content.length, TOOL_CHARS_IN_SUMMARY);
  if (m.role === 'assistant') return (m.content?.length ?? 0) + (m.toolCalls ?? []).reduce((n, c) => n + c.arguments.length, 0);
  return m.content.length;
}

/** The oldest whole turns of `overflow`, up to about CHUNK_CHARS (at least one turn). */
function firstChunk(overflow: ChatMessage[]): ChatMessage[] {
  let end = 0;
  let chars = 0;
  for (const turn of splitTurns(overflow)) {
    const size = turn.messages.reduce((n, m) => n + roughChars(m), 0);
    if (end > 0 && chars + size > CHUNK_CHARS) break;
    end = turn.end;
    chars += size;
  }
  return overflow.slice(0, end);
}

/** The registry hands out the same spec object for a tool every time, so its size is measured once. */
const specBytes = new WeakMap<ToolSpec, number>();

/** Bytes bound tokens from above (a BPE token covers at least one byte), plus the framing. */
function toolsByteBound(tools: ToolSpec[]): number {
  let n = 0;
  for (const t of tools) {
    let bytes = specBytes.get(t);
    if (bytes === undefined) {
      bytes = TOOL_SPEC_OVERHEAD + Buffer.byteLength(t.name) + Buffer.byteLength(t.description) + Buffer.byteLength(JSON.stringify(t.parameters));
      specBytes.set(t, bytes);
    }
    n += bytes;
  }
  return n;
}

export async function buildContext(input: BuildContextInput): Promise<{ messages: ChatMessage[]; promptTokens: number }> {
  const { session, history, counter, log } = input;
  // Most requests fit by bytes alone; then no tokenizer is loaded or run at all.
  const firstUpTo = Math.max(0, Math.min(Math.floor(session.summarizedUpTo) || 0, history.length));
  const quick = fitContext({ system: input.system, summary: session.summary, history: history.slice(firstUpTo), budgetTokens: input.budgetTokens, toolsTokens: toolsByteBound(input.tools), counter, byteBoundOnly: true });
  if (quick.fits) return { messages: quick.messages, promptTokens: quick.tokens };
  const toolsTokens = counter.countTools(input.tools);
  let upTo = Math.max(0, Math.min(Math.floor(session.summarizedUpTo) || 0, history.length));
  let summary = session.summary;
  const fit = () =>
    fitContext({ system: input.system, summary, history: history.slice(upTo), budgetTokens: input.budgetTokens, toolsTokens, counter });

  let result = fit();
  for (let calls = 0; result.overflow.length > 0 && calls < MAX_SUMMARY_CALLS; calls++) {
    const chunk = firstChunk(result.overflow);
    let next: string;
    try {
      next = await input.summarize(summary, chunk);
    } catch (err) {
      log.warn(
        { sessionId: session.id, err: err instanceof Error ? err.message : String(err), keptRaw: result.overflow.length },
        'running summary failed; older turns stay in the history and are retried next call',
      );
      break;
    }
    upTo += chunk.length;
    summary = next;
    try {
      await input.saveSummary(next, upTo);
    } catch (err) {
      // This request still uses the new summary; the next call re-summarises from the saved point.
      log.error({ sessionId: session.id, err: err instanceof Error ? err.message : String(err) }, 'saving the running summary failed');
    }
    result = fit();
  }
  if (!result.fits) {
    log.warn({ sessionId: session.id, tokens: result.tokens, budget: input.budgetTokens }, 'prompt exceeds HERMES_CONTEXT_TOKENS even after trimming');
  }
  return { messages: result.messages, promptTokens: result.tokens };
}
