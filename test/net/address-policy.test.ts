import { describe, expect, it } from 'vitest';
import {
  checkHost,
  checkResolved,
  classifyIp,
  isAllowed,
  parseAllowList,
  parseIpLiteral,
} from '../../src/capabilities/net/address-policy.js';
import { followRedirect, isCredentialHeader } from '../../src/capabilities/net/redirect-rules.js';

describe('parseIpLiteral: legacy IPv4 spellings are normalised by us, not only by WHATWG URL', () => {
  const loopbackSpellings = ['127.1', '0177.0.0.1', '2130706433', '0x7f000001', '0x7f.1', '0x7f.0.0.1', '017700000001', '127.000.000.001', '127.0.0.1.'];
  it.each(loopbackSpellings)('%s → 127.0.0.1 (and new URL agrees)', (spelling) => {
    expect(parseIpLiteral(spelling)).toEqual({ address: '127.0.0.1', family: 4 });
    expect(new URL(`http://${spelling}/`).hostname).toBe('127.0.0.1');
  });

  it('short forms fill the remaining bytes from the last part', () => {
    expect(parseIpLiteral('1.2.3')?.address).toBe('1.2.0.3');
    expect(parseIpLiteral('10.1')?.address).toBe('10.0.0.1');
    expect(parseIpLiteral('0')?.address).toBe('0.0.0.0');
  });

  it('out-of-range numbers and names are not IPs', () => {
    expect(parseIpLiteral('256.1.1.1')).toBeUndefined();
    expect(parseIpLiteral('4294967296')).toBeUndefined();
    expect(parseIpLiteral('09.0.0.1')).toBeUndefined();
    expect(parseIpLiteral('example.com')).toBeUndefined();
  });

  it('IPv6 with brackets, zone ids and embedded IPv4 is canonicalised', () => {
    expect(parseIpLiteral('[0:0:0:0:0:0:0:1]')).toEqual({ address: '::1', family: 6 });
    expect(parseIpLiteral('[::ffff:127.0.0.1]')?.address).toBe('::ffff:7f00:1');
    expect(parseIpLiteral('fe80::1%eth0')?.address).toBe('fe80::1');
  });
});

describe('classifyIp', () => {
  const cases: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'], ['10.2.3.4', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'], ['100.64.0.1', 'cgnat'], ['100.127.255.255', 'cgnat'], ['169.254.1.1', 'link-local'],
    ['169.254.169.254', 'metadata'], ['fd00:ec2::254', 'metadata'], ['100.100.100.200', 'metadata'], ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'], ['::1', 'loopback'], ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'], ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'], ['192.0.0.8', 'reserved'], ['198.18.0.1', 'reserved'], ['198.19.255.1', 'reserved'],
    ['240.0.0.1', 'reserved'], ['fc00::1', 'unique-local'], ['fd12:3456::1', 'unique-local'], ['fe80::1', 'link-local'],
    ['::7f00:1', 'reserved'], ['64:ff9b:1::a00:1', 'reserved'], ['8.8.8.8', 'public'], ['172.32.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'], ['64:ff9b::808:808', 'public'], ['2002:808:808::1', 'public'],
  ];
  it.each(cases)('%s is %s', (ip, kind) => {
    expect(classifyIp(ip).kind).toBe(kind);
  });

  it('IPv6 forms carrying an IPv4 address are judged by that address', () => {
    expect(classifyIp('::ffff:10.0.0.1')).toEqual({ kind: 'private', embedded: '10.0.0.1' });
    expect(classifyIp('64:ff9b::10.0.0.1')).toEqual({ kind: 'private', embedded: '10.0.0.1' });
    expect(classifyIp('2002:7f00:1::')).toEqual({ kind: 'loopback', embedded: '127.0.0.1' });
    expect(classifyIp('::ffff:169.254.169.254').kind).toBe('metadata');
  });
});

describe('checkHost and checkResolved', () => {
  it('refusals say refused, name the address and the reason, and how to allow', () => {
    const v = checkHost('127.0.0.1', 80, []);
    expect(v).toEqual({
      ok: false,
      reason:
        'refused: 127.0.0.1 is a loopback address (private, loopback, link-local and metadata addresses are not reachable; an operator can allow a host with HERMES_NET_ALLOW)',
    });
  });

  it.each(['localhost', 'LOCALHOST.', 'api.localhost', 'metadata', 'metadata.google.internal', 'metadata.goog', 'db.corp.internal'])(
    'name %s is refused before any lookup',
    (name) => {
      const v = checkHost(name, 80, []);
      expect(v.ok).toBe(false);
      if (!v.ok) expect(v.reason).toMatch(/^refused: .+ is (a|an) /);
    },
  );

  it('a name passes the first check and is then judged by every address', () => {
    expect(checkHost('example.com', 443, [])).toEqual({ ok: true, allowed: false });
    expect(checkResolved('example.com', 443, ['93.184.216.34'], [])).toEqual({ ok: true, allowed: false });
    const mixed = checkResolved('rebind.example', 443, ['93.184.216.34', '10.0.0.5'], []);
    expect(mixed.ok).toBe(false);
    if (!mixed.ok) expect(mixed.reason).toContain('refused: rebind.example resolves to 10.0.0.5, a private address');
    expect(checkResolved('empty.example', 443, [], []).ok).toBe(false);
  });

  it('the allow list matches the host as written (or the same IP literal) and the port', () => {
    const allow = parseAllowList(['127.0.0.1:9000', 'wiki.corp', '[::1]:8080', 'broken:entry:x']);
    expect(allow).toEqual([{ host: '127.0.0.1', port: 9000 }, { host: 'wiki.corp', port: undefined }, { host: '::1', port: 8080 }]);
    expect(checkHost('127.0.0.1', 9000, allow)).toEqual({ ok: true, allowed: true });
    expect(checkHost('0x7f.1', 9000, allow)).toEqual({ ok: true, allowed: true });
    expect(checkHost('127.0.0.1', 9001, allow).ok).toBe(false);
    expect(checkHost('[::1]', 8080, allow)).toEqual({ ok: true, allowed: true });
    expect(checkResolved('wiki.corp', 1234, ['10.1.2.3'], allow)).toEqual({ ok: true, allowed: true });
    // An allowed IP does not make every name that resolves to it allowed (Host-based routing).
    expect(checkResolved('rebind.example', 9000, ['127.0.0.1'], allow).ok).toBe(false);
    expect(isAllowed(allow, 'WIKI.CORP.', 80)).toBe(true);
  });
});

describe('redirect rules', () => {
  const base = { url: new URL('https://a.example/x'), method: 'POST' as const, headers: { authorization: 'Bearer t', cookie: 'c=1', 'x-api-key': 'k', 'x-trace': 't', 'content-type': 'application/json' }, body: '{}' };

  it('cross-origin hops drop credential headers, same-origin hops keep them', () => {
    const cross = followRedirect(base, 307, 'https://b.example/y');
    expect('error' in cross).toBe(false);
    if ('error' in cross) return;
    expect(cross.headers).toEqual({ 'x-trace': 't', 'content-type': 'application/json' });
    expect(cross.method).toBe('POST');
    expect(cross.body).toBe('{}');
    const same = followRedirect(base, 307, '/z');
    if ('error' in same) throw new Error(same.error);
    expect(same.headers.authorization).toBe('Bearer t');
    expect(same.url.toString()).toBe('https://a.example/z');
  });

  it('303, and 301/302 after POST, become a GET without a body', () => {
    for (const status of [301, 302, 303]) {
      const next = followRedirect(base, status, '/z');
      if ('error' in next) throw new Error(next.error);
      expect(next.method).toBe('GET');
      expect(next.body).toBeUndefined();
      expect(next.headers['content-type']).toBeUndefined();
    }
    const put = followRedirect({ ...base, method: 'PUT' }, 302, '/z');
    if ('error' in put) throw new Error(put.error);
    expect(put.method).toBe('PUT');
  });

  it('credential header detection', () => {
    for (const h of ['authorization', 'cookie', 'proxy-authorization', 'x-api-key', 'x-auth-token', 'x-subscription-token', 'x-hub-signature']) {
      expect(isCredentialHeader(h)).toBe(true);
    }
    expect(isCredentialHeader('content-type')).toBe(false);
    expect(isCredentialHeader('accept')).toBe(false);
  });
});
