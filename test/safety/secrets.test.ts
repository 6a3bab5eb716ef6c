import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { containsSecret, redactSecrets } from '../../src/basics/safety/secrets.js';
import { createRedactor } from '../../src/runtime/trace/redact.js';
import { createLogger } from '../../src/basics/log.js';
import { looksLikeSecret } from '../../src/state/memory/fact-text.js';
import { FAKE_CREDENTIALS } from '../helpers/fake-secrets.js';

/** The one redactor, checked per credential shape in every place that shows text: plain text, trace lines, log lines, memory. */
describe.each(FAKE_CREDENTIALS)('the $shape', ({ text, secret }) => {
  it('is removed from text, and the words around it stay', () => {
    const out = redactSecrets(`before ${text} after`);
    expect(out).not.toContain(secret);
    expect(out).toMatch(/^before .*\[redacted\].* after$/s);
    expect(containsSecret(text)).toBe(true);
  });

  it('never reaches a trace line', () => {
    // After a line break, which JSON writes as \n right before the secret.
    const line = createRedactor([])({ type: 'tool_call', result: `output:\n${text}`, args: { body: text } });
    expect(line).not.toContain(secret);
    expect(JSON.parse(line)).toMatchObject({ type: 'tool_call' });
  });

  it('never reaches a log line, in the message or a field', () => {
    let out = '';
    const log = createLogger('info', new Writable({ write(chunk, _e, cb) { out += String(chunk); cb(); } }));
    log.warn({ err: `request failed:\n${text}` }, `fetch said ${text}`);
    expect(out).toContain('fetch said');
    expect(out).not.toContain(secret);
  });

  it('is refused by memory', () => {
    expect(looksLikeSecret(`remember: ${text}`)).toBe(true);
  });
});

describe('the redactor', () => {
  it('leaves ordinary prose, ids and links alone', () => {
    for (const plain of [
      'A basic understanding of Bearer tokens helps.',
      'The secret to good coffee is fresh beans',
      'See https://example.com/team/payments?id=42 and 123e4567-e89b-12d3-a456-426614174000',
      'Deploy sk-1 to the eu cluster (ticket AKIA-5)',
    ]) {
      expect(redactSecrets(plain), plain).toBe(plain);
      expect(containsSecret(plain), plain).toBe(false);
    }
  });

  it('keeps a JSON line whole however many shapes it holds', () => {
    const all = FAKE_CREDENTIALS.map((c) => c.text).join('\n');
    const line = createRedactor([])({ messages: [{ content: all }, { args: '{"q":"x"}' }], answer: `again:\n${all}` });
    expect(JSON.parse(line)).toMatchObject({ messages: [{}, { args: '{"q":"x"}' }] });
    for (const { secret } of FAKE_CREDENTIALS) expect(line).not.toContain(secret);
  });

  it('removes an encrypted key block with its headers', () => {
    const pem = [['-----BEGIN', 'RSA PRIVATE', 'KEY-----'].join(' '), 'Proc-Type: 4,ENCRYPTED', 'DEK-Info: AES-128-CBC,00EXAMPLE', '', 'MIIEXAMPLEbody0000', '-----END RSA PRIVATE KEY-----'].join('\n');
    const out = redactSecrets(`key:\n${pem}\nthanks`);
    expect(out).not.toContain('MIIEXAMPLEbody0000');
    expect(out).toMatch(/thanks$/);
  });

  it('replaces configured secrets of any shape, also inside JSON', () => {
    const configured = 'plain-signing-secret-value';
    expect(redactSecrets(`sig ${configured}.`, [configured])).toBe('sig [redacted].');
    const line = createRedactor([configured, undefined, 'short'])({ text: `a "${configured}" b`, note: 'short' });
    expect(line).not.toContain(configured);
    expect(line).toContain('short');
  });

  it('blanks values under keys named like a secret, at any depth, and leaves the same words in text alone', () => {
    const redact = createRedactor([]);
    const line = redact({ type: 'tool_call', args: { headers: { Authorization: 'opaque-value-1', 'X-API-Key': 'opaque-value-2' }, list: [{ password: 'opaque-value-3', token: null }] }, result: 'the token: "password": is a word here' });
    expect(JSON.parse(line)).toEqual({ type: 'tool_call', args: { headers: { Authorization: '[redacted]', 'X-API-Key': '[redacted]' }, list: [{ password: '[redacted]', token: null }] }, result: 'the token: "password": is a word here' });
    // Keys that only contain a secret's name, and records without such keys, come out as JSON.stringify writes them.
    const plain = { type: 'model_call', messages: [{ role: 'user', content: 'my tokens and secrets' }], tokenCount: 3, secretary: 'x' };
    expect(redact(plain)).toBe(JSON.stringify(plain));
  });

  it('does not echo a log line secret the logger was told about', () => {
    let out = '';
    const known = 'opaque0signing0secret';
    const log = createLogger('info', new Writable({ write(chunk, _e, cb) { out += String(chunk); cb(); } }), 1, [known]);
    log.info(`verifying with ${known}`);
    expect(out).toContain('verifying with [redacted]');
  });
});
