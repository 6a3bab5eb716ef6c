/**
 * Secrets must never reach traces: traces hold whole prompts, and a user may paste a key into chat.
 * Patterns cover common token shapes; known configured secrets are replaced verbatim.
 */
const PATTERNS: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g, // OpenAI-style keys
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, // Slack tokens
  /\bxapp-[A-Za-z0-9-]{10,}/g,
  /\b[MN][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,38}\b/g, // Discord bot tokens
  /\b(?:ghp|gho|ghs|github_pat)_[A-Za-z0-9_]{20,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
];

const SECRET_KEYS = /^(authorization|api[-_]?key|apikey|token|bot[-_]?token|app[-_]?token|signing[-_]?secret|password|secret|cookie|x-api-key)$/i;

export function createRedactor(knownSecrets: Array<string | undefined>): (value: unknown) => unknown {
  const known = knownSecrets.filter((s): s is string => typeof s === 'string' && s.length >= 8 && s !== 'not-needed');
  const redactString = (s: string): string => {
    let out = s;
    for (const k of known) out = out.split(k).join('[redacted]');
    for (const p of PATTERNS) out = out.replace(p, '[redacted]');
    return out;
  };
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return redactString(v);
    if (depth > 20 || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : walk(x, depth + 1);
    return out;
  };
  return (value) => walk(value, 0);
}
