import { redactSecrets, REDACTED } from '../../basics/safety/secrets.js';

/**
 * Secrets must never reach traces: traces hold whole prompts, and a user may paste a key into chat.
 * The credential shapes are safety/secrets.ts's (the same list logs and memory use); the
 * configured secrets are replaced verbatim whatever their shape.
 */

const SECRET_KEY_NAMES = 'authorization|api[-_]?key|apikey|token|bot[-_]?token|app[-_]?token|signing[-_]?secret|password|secret|cookie|x-api-key';
const SECRET_KEYS = new RegExp(`^(${SECRET_KEY_NAMES})$`, 'i');
/**
 * Such a key as JSON.stringify writes it: the names hold no character JSON escapes, so a key that
 * SECRET_KEYS matches is in the text exactly like this.
 */
const SECRET_KEY_IN_JSON = new RegExp(`"(${SECRET_KEY_NAMES})":`, 'i');

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
  // A replacer function takes JSON.stringify off V8's fast path for every value of a whole
  // prompt; without a key named like a secret in the text, it would have changed nothing.
  const serialise = (value: unknown): string | undefined => {
    const plain = JSON.stringify(value);
    return plain !== undefined && SECRET_KEY_IN_JSON.test(plain) ? JSON.stringify(value, replacer) : plain;
  };
  return (value) => redactSecrets(serialise(value) ?? 'null', known);
}
