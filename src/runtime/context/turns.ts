import type { ChatMessage } from '../../basics/types.js';

/**
 * Where a history may be cut, and how to make any slice of it a request providers accept.
 *
 * OpenAI-compatible servers answer 400 when an assistant message's tool_calls are not followed by a
 * tool message for every call id, or when a tool message answers no preceding call. Trimming,
 * summarising and crash recovery all cut histories, so every cut goes through these two functions.
 */

/**
 * Start indices of the history's turns. A turn starts at a user message, unless a tool result after
 * that message answers a call made before it (an approval resolved after a newer message arrived):
 * then the two turns are one, so a call and its result are never on different sides of a cut.
 * Index 0 always starts a turn, even when the history does not begin with a user message.
 */
export function turnStarts(history: readonly ChatMessage[]): number[] {
  const callAt = new Map<string, number>();
  // Running sum of delta at i > 0 means a call/result pair spans i: cutting right before i splits it.
  const delta = new Array<number>(history.length + 1).fill(0);
  history.forEach((m, i) => {
    if (m.role === 'assistant') {
      for (const c of m.toolCalls ?? []) if (!callAt.has(c.id)) callAt.set(c.id, i);
    } else if (m.role === 'tool') {
      const c = callAt.get(m.toolCallId);
      if (c !== undefined && c < i) {
        delta[c + 1]! += 1;
        delta[i + 1]! -= 1;
      }
    }
  });
  const starts: number[] = [];
  let open = 0;
  for (let i = 0; i < history.length; i++) {
    open += delta[i]!;
    if (i === 0 || (history[i]!.role === 'user' && open === 0)) starts.push(i);
  }
  return starts;
}

/** The history split at turnStarts, with each turn's original index range. */
export function splitTurns(history: readonly ChatMessage[]): { start: number; end: number; messages: ChatMessage[] }[] {
  const starts = turnStarts(history);
  return starts.map((start, k) => {
    const end = starts[k + 1] ?? history.length;
    return { start, end, messages: history.slice(start, end) };
  });
}

/**
 * Makes a message list valid for the provider: each tool result directly follows the assistant
 * message that called it (in call order), results without an earlier call and duplicates are
 * dropped, and calls without a result are removed from their assistant message (which disappears if
 * nothing else is left in it). Everything else keeps its order.
 */
export function pairToolMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  const calledSoFar = new Set<string>();
  const resultFor = new Map<string, Extract<ChatMessage, { role: 'tool' }>>();
  for (const m of messages) {
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) calledSoFar.add(c.id);
    else if (m.role === 'tool' && calledSoFar.has(m.toolCallId) && !resultFor.has(m.toolCallId)) resultFor.set(m.toolCallId, m);
  }
  const out: ChatMessage[] = [];
  const answered = new Set<string>();
  for (const m of messages) {
    if (m.role === 'tool') continue;
    if (m.role !== 'assistant' || !m.toolCalls || m.toolCalls.length === 0) {
      out.push(m);
      continue;
    }
    const calls = m.toolCalls.filter((c) => resultFor.has(c.id) && !answered.has(c.id));
    if (calls.length === 0) {
      if (m.content) out.push({ role: 'assistant', content: m.content });
      continue;
    }
    out.push(calls.length === m.toolCalls.length ? m : { ...m, toolCalls: calls });
    for (const c of calls) {
      answered.add(c.id);
      out.push(resultFor.get(c.id)!);
    }
  }
  return out;
}
