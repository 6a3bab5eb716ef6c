import type { ChatMessage } from '../basics/types.js';

/**
 * The grounding check (HERMES_GROUNDING). A model asked about the live world sometimes answers
 * from memory with exact-looking data — a price, a time, a date, a link — without calling any of
 * the tools it was offered, and the person cannot tell. When a final answer states such a figure
 * that appears in no message of the conversation (the system prompt, the people's words, tool
 * results, earlier answers) and the turn called no tool, the loop gives the model one more step
 * with a note (model-notes.ts `groundingNote`): check with a tool, or say what is from memory.
 *
 * `retry`: check (the default). `off`: never.
 */
export type GroundingMode = 'retry' | 'off';

/**
 * What counts as a specific figure, and what does not:
 * - links (http/https URLs);
 * - times of day (`14:05`, `9:30 am`, `5pm`) and dates (`2026-12-02`, `12/02/2026`,
 *   `2 December 2026`, `December 2, 2026`);
 * - numbers with a currency sign or code, a percent sign, a decimal point or thousands separators
 *   (`$12.50`, `12 %`, `3.7`, `1,024`), and plain numbers of 3 or more digits (`1024`).
 * Not figures: small plain integers (counts, list numbering, "3 steps"), bare years (`in 1969`:
 * general knowledge more often than live data), and anything inside code (fenced blocks and
 * `inline code`), which shows commands and examples rather than claims, and chat mention markup
 * (`<@123>`, `<@!123>`, `<@&123>`, `<#123>`): the id in it names a person, role or channel.
 *
 * A figure is grounded when it appears in a message, compared without thousands separators,
 * currency signs and case; a date is also found in ISO form (the system prompt states today's).
 */
const CLAIM_PATTERNS: readonly RegExp[] = [
  /\bhttps?:\/\/[^\s<>()"'`]+/gi,
  /\b\d{4}-\d{2}-\d{2}\b/g,
  /\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/g,
  /\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+\d{4}\b/gi,
  /\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b/gi,
  /\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?(?![\d:])/gi,
  /\b\d{1,2}\s?[ap]\.?m\b\.?/gi,
  /(?:[$€£¥₹]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:%|percent\b|usd\b|eur\b|gbp\b|dollars?\b|euros?\b))/gi,
  /\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b/g,
  /\b\d+\.\d+\b/g,
  /\b\d{3,}\b/g,
];

const HAS_DIGIT_OR_LINK = /\d|https?:\/\//i;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const BARE_YEAR = /^(19|20)\d{2}$/;
/** At most this many figures are named back to the model: the note stays short. */
const MAX_CLAIMS = 5;

/** The figures of `answer` that no message of `messages` contains, in order of appearance (at most 5). */
export function ungroundedClaims(answer: string, messages: readonly ChatMessage[]): string[] {
  const claims = figuresIn(answer);
  if (claims.length === 0) return [];
  const haystack = normalise(messages.map(textOf).join('\n'));
  const out: string[] = [];
  for (const claim of claims) {
    if (out.includes(claim) || grounded(claim, haystack)) continue;
    out.push(claim);
    if (out.length === MAX_CLAIMS) break;
  }
  return out;
}

/** Every figure of the text outside code, longest match first where patterns overlap (a date is not also three numbers). */
export function figuresIn(answer: string): string[] {
  // Every pattern but the link needs a digit: most answers are done after one scan, not eleven.
  if (!HAS_DIGIT_OR_LINK.test(answer)) return [];
  const text = withoutCode(answer);
  const found: Array<{ at: number; end: number; text: string }> = [];
  for (const pattern of CLAIM_PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const raw = m[0].replace(/[.,;:!?]+$/, '');
      const at = m.index;
      const end = at + raw.length;
      if (found.some((f) => at < f.end && end > f.at)) continue;
      if (BARE_YEAR.test(raw)) continue;
      found.push({ at, end, text: raw });
    }
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.text);
}

function grounded(claim: string, haystack: string): boolean {
  const c = normalise(claim);
  if (haystack.includes(c)) return true;
  const iso = isoDate(claim);
  if (iso && haystack.includes(iso)) return true;
  // A link is grounded by the same address with or without its trailing slash.
  if (/^https?:/i.test(claim)) return haystack.includes(c.replace(/\/+$/, ''));
  // "$12.50" by "12.50", "12 %" by "12 percent": for money and shares the number carries the claim.
  if (!/[$€£¥₹%]|percent|usd|eur|gbp|dollar|euro/i.test(claim)) return false;
  const digits = c.replace(/[^\d.]/g, '').replace(/\.$/, '');
  return digits.length > 0 && new RegExp(`(^|[^\\d.])${escape(digits)}($|[^\\d])`).test(haystack);
}

/** Lower case; thousands separators and currency signs gone; runs of spaces one space. */
function normalise(text: string): string {
  return text
    .toLowerCase()
    .replace(/(\d),(?=\d{3}\b)/g, '$1')
    .replace(/[$€£¥₹]\s?/g, '')
    .replace(/\s+/g, ' ');
}

/** "2 December 2026" / "December 2, 2026" → "2026-12-02". */
function isoDate(claim: string): string | undefined {
  const lower = claim.toLowerCase();
  const month = MONTHS.findIndex((m) => new RegExp(`\\b${m}`).test(lower));
  const year = /\b(\d{4})\b/.exec(lower)?.[1];
  const day = /\b(\d{1,2})(?:st|nd|rd|th)?\b/.exec(lower.replace(/\b\d{4}\b/, ''))?.[1];
  if (month < 0 || !year || !day) return undefined;
  return `${year}-${String(month + 1).padStart(2, '0')}-${day.padStart(2, '0')}`;
}

function withoutCode(text: string): string {
  return text.replace(/```[\s\S]*?(```|$)/g, ' ').replace(/`[^`\n]*`/g, ' ').replace(/<(?:@[!&]?|#)\d+>/g, ' ');
}

function textOf(m: ChatMessage): string {
  const parts: string[] = [];
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content)) for (const p of m.content as unknown[]) if (p && typeof p === 'object' && 'text' in p && typeof p.text === 'string') parts.push(p.text);
  if (m.role === 'assistant' && m.toolCalls) for (const c of m.toolCalls) parts.push(c.arguments);
  return parts.join('\n');
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
