import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetRefusedError } from '../../src/capabilities/net/net-client.js';
import { createNetClient } from '../../src/capabilities/net/safe-fetch.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { fakeLookup, silentLog } from './net-helpers.js';

let a: FakeWeb;
let b: FakeWeb;
beforeAll(async () => {
  [a, b] = await Promise.all([startFakeWeb(), startFakeWeb()]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});

function client(allow: string[], extra: Partial<Parameters<typeof createNetClient>[0]> = {}) {
  return createNetClient({ allow, log: silentLog, lookup: fakeLookup({}), defaultTimeoutMs: 5_000, ...extra });
}

async function waitFor(check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('allow list', () => {
  it('host:port allows exactly that port; a bare host allows any port', async () => {
    const ok = await client([`127.0.0.1:${a.port}`]).request({ url: a.url('/text') });
    expect(ok.status).toBe(200);
    expect(ok.body.toString()).toBe('just plain text\nsecond line');
    await expect(client([`127.0.0.1:${b.port}`]).request({ url: a.url('/text') })).rejects.toThrow(NetRefusedError);
    const any = await client(['127.0.0.1']).request({ url: b.url('/text') });
    expect(any.status).toBe(200);
  });

  it('an allowed name is resolved once and the socket goes to that checked address, with Host kept', async () => {
    const lookup = fakeLookup({ 'pinned.example': ['127.0.0.1'] });
    const res = await client([`pinned.example:${a.port}`], { lookup }).request({ url: `http://pinned.example:${a.port}/echo` });
    const echoed = JSON.parse(res.body.toString()) as { headers: Record<string, string> };
    expect(echoed.headers.host).toBe(`pinned.example:${a.port}`);
    // One lookup, ours; Node never resolved the name itself (it would fail offline).
    expect(lookup.asked).toEqual(['pinned.example']);
  });

  it('an operator may allow a normally refused name such as localhost', async () => {
    const lookup = fakeLookup({ localhost: ['127.0.0.1', '::1'] });
    const res = await client([`localhost:${a.port}`], { lookup }).request({ url: `http://localhost:${a.port}/text` });
    expect(res.status).toBe(200);
    await expect(client([`localhost:${b.port}`], { lookup }).request({ url: `http://localhost:${a.port}/text` })).rejects.toThrow(/^refused: localhost is a loopback host name/);
  });

  it('only http(s), no user:pass@, no invalid URLs', async () => {
    const c = client(['127.0.0.1']);
    await expect(c.request({ url: `http://user:pw@127.0.0.1:${a.port}/text` })).rejects.toThrow(/^refused: URLs with a user name or password/);
    await expect(c.request({ url: 'file:///etc/passwd' })).rejects.toThrow(/^refused: only http and https/);
    await expect(c.request({ url: 'ftp://127.0.0.1/' })).rejects.toThrow(/^refused: only http and https/);
    await expect(c.request({ url: 'not a url' })).rejects.toThrow(/^refused: .* is not a valid absolute URL/);
  });
});

describe('redirects', () => {
  it('every hop is re-checked: a redirect to a private address is refused and never reached', async () => {
    const c = client([`127.0.0.1:${a.port}`], { lookup: fakeLookup({ 'evil.example': ['127.0.0.1'] }) });
    const redirectsBefore = a.hits('/redirect');
    const targets = [b.url('/private'), `http://localhost:${a.port}/private`, `http://evil.example:${a.port}/private`, 'http://169.254.169.254/latest/meta-data/', `http://[::1]:${a.port}/private`];
    for (const to of targets) {
      await expect(c.request({ url: a.url(`/redirect?to=${encodeURIComponent(to)}`) })).rejects.toThrow(/^refused: /);
    }
    expect(a.hits('/private')).toBe(0);
    expect(b.hits('/private')).toBe(0);
    // The servers are shared with the other tests (which the suite shuffles): count this test's hits only.
    expect(a.hits('/redirect') - redirectsBefore).toBe(targets.length);
  });

  it('follows up to 5 redirects and refuses the 6th', async () => {
    const c = client([`127.0.0.1:${a.port}`]);
    const five = await c.request({ url: a.url('/chain/5') });
    expect(five.body.toString()).toBe('end of chain');
    expect(five.url).toBe(a.url('/chain/0'));
    const endHits = a.hits('/chain/0');
    await expect(c.request({ url: a.url('/chain/6') })).rejects.toThrow('refused: more than 5 redirects');
    expect(a.hits('/chain/0')).toBe(endHits);
  });

  it('credentials are dropped on a cross-origin hop and kept on a same-origin hop', async () => {
    const c = client(['127.0.0.1']);
    const headers = { authorization: 'Bearer secret-token', cookie: 'sid=1', 'x-api-key': 'k1', 'x-trace': 'keep-me' };
    const cross = await c.request({ url: a.url(`/redirect?status=307&to=${encodeURIComponent(b.url('/echo'))}`), headers });
    const seen = (JSON.parse(cross.body.toString()) as { headers: Record<string, string> }).headers;
    expect(seen.authorization).toBeUndefined();
    expect(seen.cookie).toBeUndefined();
    expect(seen['x-api-key']).toBeUndefined();
    expect(seen['x-trace']).toBe('keep-me');
    const same = await c.request({ url: a.url('/redirect?to=/echo'), headers });
    expect((JSON.parse(same.body.toString()) as { headers: Record<string, string> }).headers.authorization).toBe('Bearer secret-token');
  });

  it('never follows a redirect for a request with a body (301-308): it fails naming the target, and nothing reaches it', async () => {
    const c = client(['127.0.0.1']);
    const post = { method: 'POST' as const, body: '{"x":1}', headers: { 'content-type': 'application/json' } };
    for (const status of [301, 302, 303, 307, 308]) {
      const before = a.received.filter((r) => r.path === '/echo').length;
      const err = await c.request({ url: a.url(`/redirect?status=${status}&to=/echo`), ...post }).then(() => undefined, (e: Error) => e);
      expect(err?.message).toContain(`answered HTTP ${status}, redirecting to ${a.url('/echo')}`);
      expect(err?.message).toMatch(/not followed/);
      expect(a.received.filter((r) => r.path === '/echo').length).toBe(before);
    }
  });
});
