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
 * Shapes of credentials that must never be stored. Memory is shown to the model on every turn and
 * listed by `/hermes memory`, so a pasted key would leak far beyond where it was typed.
 */
const SECRET_PATTERNS: RegExp[] = [
  /\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}/, // OpenAI / Anthropic keys
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/, // Slack tokens
  /\bxapp-\d-[A-Za-z0-9-]{10,}/, // Slack app-level tokens
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bglpat-[A-Za-z0-9_-]{20,}/, // GitLab
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/, // AWS access key ids
  /\bAIza[0-9A-Za-z_-]{35}\b/, // Google API keys
  /\b[MN][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}/, // Discord bot tokens
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/, // JWTs
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/, // Stripe
  /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/i,
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/@]+@/i, // credentials inside a URL
  // "my password is hunter2", "api key: …", "PIN = 1234": a secret announced by name with a value.
  /\b(?:password|passwort|passwd|passcode|passphrase|pin(?: code)?|api[ _-]?key|secret[ _-]key|client[ _-]secret|access[ _-]?token|auth[ _-]?token|bot[ _-]?token|private[ _-]?key|credentials?)\s*(?:is|was|=|:)\s*\S+/i,
];

/** A long unbroken run mixing letters and digits looks like a generated key even without a known prefix. */
function looksLikeRandomKey(word: string): boolean {
  if (word.length < 32 || /^[0-9a-f-]{36}$/i.test(word) /* a UUID is an id, not a secret */) return false;
  return /[a-z]/.test(word) && /[A-Z]/.test(word) && /\d/.test(word);
}

export function looksLikeSecret(text: string): boolean {
  if (SECRET_PATTERNS.some((p) => p.test(text))) return true;
  return text.split(/[\s"'`,;()<>[\]{}]+/).some(looksLikeRandomKey);
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
