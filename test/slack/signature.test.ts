import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { verifySlackSignature } from '../../adapters/slack/signature.js';

/**
 * Our signature check (adapters/slack/signature.ts) against Bolt's own `verifySlackRequest` on the
 * same requests: it must accept exactly what Bolt accepts among well-formed requests, and refuse
 * every tampered one.
 */
const fromBolt = createRequire(createRequire(import.meta.url).resolve('@slack/bolt'));
const { verifySlackRequest } = fromBolt('./receivers/verify-request.js') as {
  verifySlackRequest(o: { signingSecret: string; body: string; headers: { 'x-slack-signature': string; 'x-slack-request-timestamp': number }; nowMilliseconds?: number }): void;
};

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const NOW = 1_767_225_600_000;
const sign = (ts: string, body: string | Buffer, secret = SECRET) => 'v0=' + createHmac('sha256', secret).update(`v0:${ts}:`).update(body).digest('hex');

const ours = (signature: string | undefined, timestamp: string | undefined, body: Buffer, now = NOW) => {
  try {
    verifySlackSignature(SECRET, { signature, timestamp }, body, now);
    return true;
  } catch {
    return false;
  }
};
const bolts = (signature: string, timestamp: string, body: Buffer, now = NOW) => {
  try {
    verifySlackRequest({ signingSecret: SECRET, body: body.toString(), headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': Number(timestamp) }, nowMilliseconds: now });
    return true;
  } catch {
    return false;
  }
};

describe('verifySlackSignature', () => {
  const ts = String(NOW / 1000);
  const body = Buffer.from(JSON.stringify({ type: 'event_callback', event_id: 'Ev1', event: { type: 'app_mention', text: 'héllo ✓ <@U1>' } }));

  it('accepts what Slack signs, as Bolt does, upper- or lower-case hex', () => {
    const sig = sign(ts, body);
    expect(ours(sig, ts, body)).toBe(true);
    expect(bolts(sig, ts, body)).toBe(true);
    expect(ours('v0=' + sig.slice(3).toUpperCase(), ts, body)).toBe(true);
  });

  it('refuses a changed body, timestamp, secret or signature, as Bolt does', () => {
    const sig = sign(ts, body);
    const cases: Array<[string, string, Buffer]> = [
      [sig, ts, Buffer.concat([body, Buffer.from(' ')])],
      [sig, String(Number(ts) + 1), body],
      [sign(ts, body, 'another-secret'), ts, body],
      [sig.slice(0, -1) + (sig.endsWith('0') ? '1' : '0'), ts, body],
      ['v1=' + sig.slice(3), ts, body],
      [sig.slice(0, -2), ts, body],
      [sig + '00', ts, body],
      ['v0=', ts, body],
      ['', ts, body],
    ];
    for (const [s, t, b] of cases) {
      expect(ours(s, t, b), `${s} ${t}`).toBe(false);
      expect(bolts(s, t, b), `${s} ${t}`).toBe(false);
    }
  });

  it('refuses missing headers and timestamps more than 5 minutes from now, either way', () => {
    expect(ours(undefined, ts, body)).toBe(false);
    expect(ours(sign(ts, body), undefined, body)).toBe(false);
    const old = String(NOW / 1000 - 301);
    const ahead = String(NOW / 1000 + 301);
    expect(ours(sign(old, body), old, body)).toBe(false);
    expect(ours(sign(ahead, body), ahead, body)).toBe(false);
    const edge = String(NOW / 1000 - 300);
    expect(ours(sign(edge, body), edge, body)).toBe(true);
    expect(ours(sign('abc', body), 'abc', body)).toBe(false);
  });

  it('signs the bytes as sent: a body that is not valid UTF-8 still matches its signature', () => {
    const raw = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    expect(ours(sign(ts, raw), ts, raw)).toBe(true);
  });

  it('refuses everything with an empty signing secret', () => {
    expect(() => verifySlackSignature('', { signature: sign(ts, body, ''), timestamp: ts }, body, NOW)).toThrow(/secret/);
  });
});
