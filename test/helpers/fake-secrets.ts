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

const b64url = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

/**
 * One fake per credential shape the redactor knows: `text` is how it appears in the wild (a line
 * of a message, a header, a URL), `secret` the part that must never be seen again.
 */
export const FAKE_CREDENTIALS: ReadonlyArray<{ shape: string; text: string; secret: string }> = [
  { shape: 'OpenAI key', text: `key ${FAKE_OPENAI_KEY} here`, secret: FAKE_OPENAI_KEY },
  { shape: 'Slack bot token', text: `token ${FAKE_SLACK_BOT_TOKEN}`, secret: FAKE_SLACK_BOT_TOKEN },
  { shape: 'Slack app-level token', text: `app ${FAKE_SLACK_APP_TOKEN}`, secret: FAKE_SLACK_APP_TOKEN },
  { shape: 'GitHub token', text: `gh ${FAKE_GITHUB_TOKEN}`, secret: FAKE_GITHUB_TOKEN },
  { shape: 'GitHub fine-grained token', text: ['github', 'pat', '11EXAMPLE0notarealtoken0000000'].join('_'), secret: '11EXAMPLE0notarealtoken0000000' },
  { shape: 'Google API key', text: `?key=${['AI', 'za'].join('')}EXAMPLE-not_a_real_key_000000000000`, secret: 'EXAMPLE-not_a_real_key_000000000000' },
  { shape: 'GitLab token', text: `CI ${token('glpat', 'EXAMPLEnotarealtoken00')}`, secret: 'EXAMPLEnotarealtoken00' },
  { shape: 'Stripe key', text: ['sk', 'live', 'EXAMPLEnotarealkey0000'].join('_'), secret: 'EXAMPLEnotarealkey0000' },
  { shape: 'JWT', text: `jwt ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: 'EXAMPLE-not-real' })}.c2lnbmF0dXJlRVhBTVBMRQ`, secret: b64url({ sub: 'EXAMPLE-not-real' }) },
  { shape: 'PEM private key', text: `${['-----BEGIN', 'PRIVATE', 'KEY-----'].join(' ')}\nMIIEXAMPLEnotarealkey0000\n-----END PRIVATE KEY-----`, secret: 'MIIEXAMPLEnotarealkey0000' },
  { shape: 'PEM header without its end', text: `${['-----BEGIN', 'RSA PRIVATE', 'KEY-----'].join(' ')}\nMIIEXAMPLEtruncatedkey00`, secret: 'MIIEXAMPLEtruncatedkey00' },
  { shape: 'AWS access key id', text: `aws ${['AK', 'IA'].join('')}EXAMPLE0NOTREAL1`, secret: 'EXAMPLE0NOTREAL1' },
  { shape: 'credentials in a URL', text: 'clone https://deploy:EXAMPLEpass0notreal@git.example.com/repo.git', secret: 'EXAMPLEpass0notreal' },
  { shape: 'Bearer header', text: 'Authorization: Bearer EXAMPLE0notarealtoken', secret: 'EXAMPLE0notarealtoken' },
  { shape: 'Basic header', text: `Authorization: Basic ${Buffer.from('user:EXAMPLEpass').toString('base64')}`, secret: Buffer.from('user:EXAMPLEpass').toString('base64') },
  { shape: 'Discord bot token', text: `bot ${['MTEXAMPLEnotarealDiscord0', 'AbCdEf', 'EXAMPLEnotarealDiscordToken00'].join('.')}`, secret: 'EXAMPLEnotarealDiscordToken00' },
  { shape: 'secret announced by name', text: 'my password is EXAMPLEhunter2', secret: 'EXAMPLEhunter2' },
];
