/**
 * The one list of credential shapes. Traces, logs, memory, tool output shown to people and the
 * dashboard all ask this file, so a shape one of them knows is known to all: before, traces kept
 * Google, GitLab, Stripe, JWT, PEM and URL-embedded credentials in clear while memory refused them.
 */

interface SecretShape {
  name: string;
  /** Global; `$1` in `keep` keeps a non-secret prefix such as the scheme or "Bearer ". */
  pattern: RegExp;
  keep?: string;
  /**
   * Matches wherever `pattern` does (and maybe more), many times faster: traces redact whole
   * prompts on every model call, and the look-behind that stands in for `\b` makes V8 try every
   * position in turn, where a pattern that starts with literal text is found by a fast scan.
   */
  quick: RegExp;
  /** Text every match contains, checked before `quick` when that still scans slowly. */
  needle?: string;
}

export const REDACTED = '[redacted]';

/**
 * A leading `\b` also holds right after a JSON escape: traces and log lines are redacted as JSON
 * text, where "line one\nghp_…" has no word boundary between the `n` and the token.
 */
function shape(name: string, pattern: RegExp, opts: { keep?: string; needle?: string } = {}): SecretShape {
  const bare = pattern.source.startsWith('\\b') ? pattern.source.slice(2) : pattern.source;
  const source = bare === pattern.source ? bare : `(?:(?<![A-Za-z0-9_])|(?<=\\\\[nrt]))${bare}`;
  return { name, pattern: new RegExp(source, pattern.flags), quick: new RegExp(bare, pattern.flags.replace('g', '')), ...opts };
}

const SHAPES: readonly SecretShape[] = [
  shape('OpenAI / Anthropic key', /\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}/g),
  shape('Slack token', /\bxox[abposre]-[A-Za-z0-9-]{10,}/g),
  shape('Slack app-level token', /\bxapp-[A-Za-z0-9-]{10,}/g),
  shape('GitHub token', /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g),
  shape('GitHub fine-grained token', /\bgithub_pat_[A-Za-z0-9_]{20,}/g),
  shape('GitLab token', /\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}/g),
  shape('AWS access key id', /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g),
  shape('Google API key', /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g),
  shape('Stripe key', /\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}/g),
  shape('Discord bot token', /\b[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}/g),
  shape('JWT', /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g),
  // The header, the base64 lines after it and the end line if there (also inside JSON text, where
  // line breaks are written \n); never past a quote, so a JSON line stays whole.
  shape('PEM private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----(?:(?:\r?\n|(?:\\r)?\\n)(?:[A-Za-z-]+: [A-Za-z0-9,-]+|[A-Za-z0-9+/=]+)?)*(?:(?:\r?\n|(?:\\r)?\\n)-----END [A-Z ]*PRIVATE KEY-----)?/g),
  // An all-lower-case word after "basic" is prose ("basic understanding"), not a credential.
  shape('Authorization header', /\b([Bb]earer|BEARER|[Bb]asic|BASIC)\s+(?![a-z]+(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/-]{8,}=*/g, { keep: `$1 ${REDACTED}` }),
  shape('credentials in a URL', /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/:@"']+:[^\s/@"']+@/gi, { keep: `$1${REDACTED}@`, needle: '://' }),
  // "my password is hunter2", "api_key: …", "PIN = 1234": a value announced as a secret by name.
  shape(
    'named secret',
    /\b((?:password|passwort|passwd|passcode|passphrase|pin(?: code)?|api[ _-]?key|secret[ _-]key|client[ _-]secret|access[ _-]?token|auth[ _-]?token|bot[ _-]?token|private[ _-]?key|credentials?)\s*(?:is|was|=|:)\s*)(?!\[redacted\])[^\s"',;\\]+/gi,
    { keep: `$1${REDACTED}` },
  ),
];

/** The names of the shapes `secretShapeIn` reports, e.g. for a memory refusal message. */
export function secretShapeIn(text: string): string | undefined {
  for (const s of SHAPES) {
    if (!mayMatch(s, text)) continue;
    s.pattern.lastIndex = 0;
    if (s.pattern.test(text)) return s.name;
  }
  return undefined;
}

function mayMatch(s: SecretShape, text: string): boolean {
  return (s.needle === undefined || text.includes(s.needle)) && s.quick.test(text);
}

export function containsSecret(text: string): boolean {
  return secretShapeIn(text) !== undefined;
}

/**
 * Replaces every credential shape, and every value in `known` (the configured tokens, which may
 * have any shape), with `[redacted]`. Cheap when nothing matches: one scan per shape.
 */
export function redactSecrets(text: string, known: readonly string[] = []): string {
  let out = replaceKnownSecrets(text, known);
  for (const s of SHAPES) {
    if (!mayMatch(s, out)) continue;
    s.pattern.lastIndex = 0;
    if (!s.pattern.test(out)) continue;
    s.pattern.lastIndex = 0;
    out = out.replace(s.pattern, s.keep ?? REDACTED);
  }
  return out;
}

/**
 * Only the `known` values (configured tokens, written exactly as they appear in `text`) become
 * `[redacted]`; values under 8 characters are left alone, since they would match ordinary text.
 */
export function replaceKnownSecrets(text: string, known: readonly string[]): string {
  let out = text;
  for (const k of known) if (k.length >= 8 && out.includes(k)) out = out.split(k).join(REDACTED);
  return out;
}

/** A long unbroken run mixing lower, upper case and digits looks like a generated key even without a known prefix. */
export function looksLikeGeneratedKey(word: string): boolean {
  if (word.length < 32 || /^[0-9a-f-]{36}$/i.test(word) /* a UUID is an id, not a secret */) return false;
  return /[a-z]/.test(word) && /[A-Z]/.test(word) && /\d/.test(word);
}
