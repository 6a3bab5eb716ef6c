/**
 * Token-shaped values for tests that check secrets are refused, redacted or never echoed. They
 * are assembled at run time and plainly fake, so no committed file holds a string that a secret
 * scanner (or a reader) would take for a real credential.
 */
const token = (...parts: string[]) => parts.join('-');

export const FAKE_OPENAI_KEY = token('sk', 'proj', 'EXAMPLE', 'not', 'a', 'real', 'key', '0000');
export const FAKE_OPENAI_KEY_SHORT = token('sk', 'EXAMPLEnotarealkey0000');
/** The same value evals/memory.yaml's secret case uses, so its checks recognise it. */
export const FAKE_LIVE_KEY = token('sk', 'live', 'EXAMPLE', 'not', 'a', 'real', 'key');
export const FAKE_SLACK_BOT_TOKEN = token('xoxb', '0000000000', 'EXAMPLEnotreal');
export const FAKE_SLACK_APP_TOKEN = token('xapp', '0000000000', 'EXAMPLEnotreal');
export const FAKE_GITHUB_TOKEN = ['ghp', 'EXAMPLEnotarealtoken0000000000000000'].join('_');
