import { containsSecret, looksLikeGeneratedKey } from '../../basics/safety/secrets.js';

/**
 * Pure text rules for long-term facts: what counts as the same fact, what looks like a secret, and
 * how relevant a fact is to what the user just said.
 */

/** Lower-case words (letters and digits of any script), punctuation dropped. */
export function factTokens(text: string): string[] {
  return text.toLowerCase().normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? [];
}

export function cleanFactText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

export const DUPLICATE_JACCARD = 0.8;

/**
 * Near-duplicates: word-set Jaccard >= 0.8, or one fact's word sequence inside the other's
 * ("prefers metric units" / "prefers metric units for cooking too"). A single word inside a longer
 * fact is not enough: "vegan" must not swallow "is not vegan".
 */
export function isNearDuplicate(a: string, b: string): boolean {
  const ta = factTokens(a);
  const tb = factTokens(b);
  if (ta.length === 0 || tb.length === 0) return false;
  const sa = new Set(ta);
  const sb = new Set(tb);
  let inter = 0;
  for (const t of sa) if (sb.has(t)) inter++;
  const union = sa.size + sb.size - inter;
  if (inter / union >= DUPLICATE_JACCARD) return true;
  const [short, long] = ta.length <= tb.length ? [ta, tb] : [tb, ta];
  if (short.length < 2) return false;
  return ` ${long.join(' ')} `.includes(` ${short.join(' ')} `);
}

/** When one fact's words sit inside the other's, the longer is the more detailed; otherwise the newest wording wins. */
export function mergedFactText(oldText: string, newText: string): string {
  const o = factTokens(oldText).join(' ');
  const n = factTokens(newText).join(' ');
  return o.length > n.length && ` ${o} `.includes(` ${n} `) ? oldText : newText;
}

/**
 * Memory is shown to the model on every turn and listed by `/hermes memory`, so a pasted key would
 * leak far beyond where it was typed: refuse every credential shape the redactor knows, and also a
 * long random-looking word, which is likely a key of a shape nobody listed.
 */
export function looksLikeSecret(text: string): boolean {
  return containsSecret(text) || text.split(/[\s"'`,;()<>[\]{}]+/).some(looksLikeGeneratedKey);
}

/**
 * Relevance of a fact to a query: the share of the query's words (ignoring very common ones) that
 * appear in the fact, with prefix matches ("deploy" ~ "deployment") counting half.
 */
const STOPWORDS = new Set(
  'a an and are as at be but by can do does for from have how i in is it me my of on or please so that the this to was what when where which who why will with you your'.split(' '),
);

export function queryTerms(query: string): string[] {
  return [...new Set(factTokens(query).filter((t) => !STOPWORDS.has(t)))];
}

export function lexicalScore(terms: readonly string[], factText: string): number {
  if (terms.length === 0) return 0;
  const words = factTokens(factText);
  const set = new Set(words);
  let score = 0;
  for (const t of terms) {
    if (set.has(t)) score += 1;
    else if (t.length >= 4 && words.some((w) => w.length >= 4 && (w.startsWith(t) || t.startsWith(w)))) score += 0.5;
  }
  return score / terms.length;
}
