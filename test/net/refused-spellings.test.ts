import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchUrlTool } from '../../tools/fetch-url.js';
import { sendWebhookTool } from '../../tools/send-webhook.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { fakeLookup, netContext } from './net-helpers.js';

/**
 * Every spelling of an internal target, through the real fetch_url path (tool → safe client →
 * policy). The private fixture listens on 127.0.0.1; a spelling that slipped through would reach
 * it (names resolve to 127.0.0.1 here), so its hit counter staying at 0 is the proof.
 */

let web: FakeWeb;
beforeAll(async () => {
  web = await startFakeWeb();
});
afterAll(async () => {
  await web.close();
});

const LITERALS = [
  '127.1', '0177.0.0.1', '2130706433', '0x7f000001', '0x7f.1', '127.0.0.1', '127.0.0.1.', '0', '[::1]', '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]', '[0:0:0:0:0:0:0:1]', '[::127.0.0.1]', '0.0.0.0', '[::]', '169.254.169.254', '[fd00:ec2::254]',
  '[::ffff:169.254.169.254]', '100.64.0.1', '100.100.100.200', '10.0.0.1', '012.0.0.1', '172.16.0.1', '192.168.0.1',
  '0xc0.0xa8.1', '[fc00::1]', '[fd12::1]', '[fe80::1]', '224.0.0.1', '[ff02::1]', '255.255.255.255', '192.0.0.1',
  '198.18.0.1', '[64:ff9b::10.0.0.1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::]', '[2002:a00:1::1]',
];
const NAMES = ['localhost', 'LocalHost.', 'app.localhost', 'metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'svc.cluster.internal'];

describe('refused address spellings through fetch_url', () => {
  it.each(LITERALS)('http://%s:<port>/private is refused', async (host) => {
    const before = web.hits('/private');
    const lookup = fakeLookup({});
    const ctx = netContext({ lookup, timeoutMs: 1_000 });
    await expect(fetchUrlTool.run({ url: `http://${host}:${web.port}/private` }, ctx)).rejects.toThrow(
      /^refused: .+ (is|embedding) .*\(private, loopback, link-local and metadata addresses are not reachable; an operator can allow a host with HERMES_NET_ALLOW\)$/,
    );
    expect(lookup.asked).toEqual([]);
    expect(web.hits('/private')).toBe(before);
  });

  it.each(NAMES)('http://%s:<port>/private is refused by name, before any DNS lookup', async (host) => {
    const before = web.hits('/private');
    const lookup = fakeLookup({ [host.toLowerCase().replace(/\.$/, '')]: ['127.0.0.1'] });
    const ctx = netContext({ lookup, timeoutMs: 1_000 });
    await expect(fetchUrlTool.run({ url: `http://${host}:${web.port}/private` }, ctx)).rejects.toThrow(/^refused: .+ is (a|an) .+ host name/);
    expect(lookup.asked).toEqual([]);
    expect(web.hits('/private')).toBe(before);
  });

  it.each([
    ['only private', ['10.0.0.5']],
    ['loopback', ['127.0.0.1']],
    ['public then loopback (every address is checked)', ['93.184.216.34', '127.0.0.1']],
    ['mapped loopback', ['::ffff:127.0.0.1']],
    ['link-local v6', ['fe80::1']],
  ])('a name resolving to %s is refused', async (_label, addresses) => {
    const before = web.hits('/private');
    const lookup = fakeLookup({ 'rebind.example': addresses });
    const ctx = netContext({ lookup, timeoutMs: 1_000 });
    await expect(fetchUrlTool.run({ url: `http://rebind.example:${web.port}/private` }, ctx)).rejects.toThrow(
      /^refused: rebind\.example resolves to /,
    );
    expect(lookup.asked).toEqual(['rebind.example']);
    expect(web.hits('/private')).toBe(before);
  });

  it('allowing 127.0.0.1:<port> does not allow another name that resolves there', async () => {
    const before = web.hits('/private');
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`], lookup: fakeLookup({ 'rebind.example': ['127.0.0.1'] }) });
    await expect(fetchUrlTool.run({ url: `http://rebind.example:${web.port}/private` }, ctx)).rejects.toThrow(/refused/);
    expect(web.hits('/private')).toBe(before);
  });

  it('send_webhook obeys the same rules (the sink is never hit)', async () => {
    const ctx = netContext({ lookup: fakeLookup({ 'hook.example': ['127.0.0.1'] }) });
    for (const url of [`http://0x7f.1:${web.port}/sink`, `http://hook.example:${web.port}/sink`, `http://[::ffff:7f00:1]:${web.port}/sink`]) {
      await expect(sendWebhookTool.run({ url, body: { a: 1 } }, ctx)).rejects.toThrow(/^refused: /);
    }
    expect(web.hits('/sink')).toBe(0);
  });

  // Runs last (file order): every refusal test above checks the counter against 0 growth.
  it('the fixture is reachable when allowed (control: the harness can hit it)', async () => {
    const before = web.hits('/private');
    expect(before).toBe(0);
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`] });
    const out = await fetchUrlTool.run({ url: web.url('/private') }, ctx);
    expect(JSON.stringify(out)).toContain('PRIVATE FIXTURE REACHED');
    expect(web.hits('/private')).toBe(before + 1);
  });
});
