import { redactSecrets, REDACTED } from '../../basics/safety/secrets.js';

/**
 * Secrets must never reach traces: traces hold whole prompts, and a user may paste a key into chat.
 * The credential shapes are safety/secrets.ts's (the same list logs and memory use); the
 * configured secrets are replaced verbatim whatever their shape.
 */

const SECRET_KEYS = /^(authorization|api[-_]?key|apikey|token|bot[-_]?token|app[-_]?token|signing[-_]?secret|password|secret|cookie|x-api-key)$/i;

/**
 * Returns a function from a trace event to its JSON line with secrets removed. Redacting the
 * serialised text in one pass per shape is far cheaper than visiting every string of a large
 * prompt; keys that name a secret are blanked during serialisation.
 */
export function createRedactor(knownSecrets: Array<string | undefined>): (value: unknown) => string {
  // Matched inside JSON text, so escaped the way JSON.stringify writes them.
  const known = knownSecrets
    .filter((s): s is string => typeof s === 'string' && s.length >= 8 && s !== 'not-needed')
    .map((s) => JSON.stringify(s).slice(1, -1));
  const replacer = (key: string, v: unknown) => (key !== '' && SECRET_KEYS.test(key) && v !== null && v !== undefined ? REDACTED : v);
  return (value) => redactSecrets(JSON.stringify(value, replacer) ?? 'null', known);
}
