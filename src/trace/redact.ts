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

/**
 * Returns a function from a trace event to its JSON line with secrets removed. Redacting the
 * serialised text in one pass per pattern is far cheaper than visiting every string of a large
 * prompt; keys that name a secret are blanked during serialisation.
 */
export function createRedactor(knownSecrets: Array<string | undefined>): (value: unknown) => string {
  const known = knownSecrets.filter((s): s is string => typeof s === 'string' && s.length >= 8 && s !== 'not-needed');
  const replacer = (key: string, v: unknown) => (key !== '' && SECRET_KEYS.test(key) && v !== null && v !== undefined ? '[redacted]' : v);
  return (value) => {
    let out = JSON.stringify(value, replacer) ?? 'null';
    for (const k of known) {
      const escaped = JSON.stringify(k).slice(1, -1);
      if (out.includes(escaped)) out = out.split(escaped).join('[redacted]');
    }
    for (const p of PATTERNS) {
      p.lastIndex = 0;
      if (p.test(out)) {
        p.lastIndex = 0;
        out = out.replace(p, '[redacted]');
      }
    }
    return out;
  };
}
