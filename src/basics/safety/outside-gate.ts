import type { ChatMessage } from '../types.js';
import type { AnyTool, EffectInput, ToolEffect } from '../../runtime/toolkit/tool-api.js';

/**
 * Outside text cannot act on its own. Measured before this existed: a fetched page's hidden
 * instructions made the model save a "standing instruction" fact (which then sat in that user's
 * every later system prompt), delete all their facts, set a reminder and send data out in a GET
 * query string, all without anyone being asked. The wrapper (outside-text.ts) tells the model such
 * text is data; this is the part that does not depend on the model listening.
 *
 * The rule: when the messages the model saw before asking for a call include outside text, a call
 * whose effect is durable or outward waits for a person on the normal approval prompt, and the
 * prompt names the sources. Reading tools stay automatic: what they return is itself wrapped and
 * counted, and they change nothing.
 */

/** The outside sources present in what the model saw, in first-seen order, without repeats. */
export function outsideSourcesIn(messages: readonly ChatMessage[]): string[] {
  const seen = new Set<string>();
  for (const m of messages) {
    if ((m.role === 'user' || m.role === 'tool') && m.outsideSource) seen.add(m.outsideSource);
  }
  return [...seen];
}

/**
 * The effect of one call: the operator's setting (tools.<name>.effect) first, then the tool's own
 * rule. A rule that throws counts as outward, the safe side.
 */
export function effectOf(tool: AnyTool, args: unknown, override: ToolEffect | undefined, input: EffectInput): ToolEffect {
  if (override !== undefined) return override;
  if (typeof tool.effect === 'function') {
    try {
      return tool.effect(args, input);
    } catch {
      return 'outward';
    }
  }
  return tool.effect ?? 'none';
}

/** Whether a call that needs no approval on its own must ask because outside text was read. */
export function gatedByOutsideText(effect: ToolEffect, sources: readonly string[]): boolean {
  return effect !== 'none' && sources.length > 0;
}

/** The requesting user's own words: the newest user message that a verified person wrote. */
export function requestText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user' && m.speaker && !m.outsideSource) return m.content;
  }
  return '';
}

/**
 * True when `url` has a query string that the user's own words do not contain: data in it came
 * from the model (and so, possibly, from an instruction in outside text). A URL the user pasted,
 * or one without a query, carries nothing they did not write.
 */
export function queryNotWrittenBy(url: string, userText: string): boolean {
  let query: string;
  try {
    query = new URL(url).search.slice(1);
  } catch {
    return true;
  }
  if (query === '') return false;
  const candidates = [url, query, safeDecode(query)];
  return !candidates.some((c) => userText.includes(c));
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
