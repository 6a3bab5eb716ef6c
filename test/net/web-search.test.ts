import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { webSearchSettingsFromEnv, webSearchTool } from '../../tools/web-search.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { fakeLookup, netContext } from './net-helpers.js';

let web: FakeWeb;
beforeAll(async () => {
  web = await startFakeWeb();
});
afterAll(async () => {
  await web.close();
});

type Raw = { backend: string; results: Array<{ title: string; url: string; snippet: string; date?: string }> };
function parts(r: Awaited<ReturnType<typeof webSearchTool.run>>): { summary: string; raw: Raw; outsideSource?: string } {
  if (typeof r === 'string') throw new Error('expected a structured result');
  return { summary: r.summary, raw: r.raw as Raw, outsideSource: r.outsideSource };
}

describe('web_search', () => {
  it('is not offered to the model without a backend, and is with one', () => {
    expect(webSearchTool.isAvailable?.({})).toBe(false);
    expect(webSearchTool.isAvailable?.({ searxngUrl: 'not a url' })).toBe(false);
    expect(webSearchTool.isAvailable?.({ searxngUrl: 'https://searx.example' })).toBe(true);
    expect(webSearchTool.isAvailable?.({ braveApiKey: 'k' })).toBe(true);

    const hidden = new ToolRegistry({});
    hidden.register(webSearchTool);
    expect(hidden.specsFor({ isAdmin: false }).map((s) => s.name)).not.toContain('web_search');
    const shown = new ToolRegistry({ web_search: { settings: webSearchSettingsFromEnv({ BRAVE_API_KEY: 'k' }) } });
    shown.register(webSearchTool);
    expect(shown.specsFor({ isAdmin: false }).map((s) => s.name)).toContain('web_search');
  });

  it('reads HERMES_SEARXNG_URL and BRAVE_API_KEY from env', () => {
    expect(webSearchSettingsFromEnv({})).toEqual({});
    expect(webSearchSettingsFromEnv({ HERMES_SEARXNG_URL: ' http://searx:8080 ', BRAVE_API_KEY: 'abc', OTHER: 'x' })).toEqual({
      searxngUrl: 'http://searx:8080',
      braveApiKey: 'abc',
    });
  });

  it('SearXNG: structured results, default 5, non-http URLs dropped, date kept', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`], settings: { searxngUrl: web.url('/searxng') } });
    const { summary, raw, outsideSource } = parts(await webSearchTool.run({ query: 'hermes' }, ctx));
    expect(raw.backend).toBe('searxng');
    expect(raw.results).toHaveLength(5);
    expect(raw.results[0]).toEqual({ title: 'SearX result 1 for hermes', url: 'https://searx-result.example/1', snippet: 'Snippet 1 about hermes', date: '2024-05-01T00:00:00' });
    expect(raw.results.some((r) => r.url.startsWith('javascript:'))).toBe(false);
    expect(summary).toContain('1. SearX result 1 for hermes (2024-05-01T00:00:00)\n   https://searx-result.example/1\n   Snippet 1 about hermes');
    expect(outsideSource).toBe('web search "hermes"');
  });

  it('max_results is capped at 10', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`], settings: { searxngUrl: web.url('/searxng') } });
    expect(parts(await webSearchTool.run({ query: 'q', max_results: 3 }, ctx)).raw.results).toHaveLength(3);
    expect(parts(await webSearchTool.run({ query: 'q', max_results: 50 }, ctx)).raw.results).toHaveLength(10);
  });

  it('Brave: key sent in its header, HTML stripped from snippets, page_age as date', async () => {
    const ctx = netContext({
      allow: [`127.0.0.1:${web.port}`],
      settings: { braveApiKey: 'brave-test-key', braveEndpoint: web.url('/brave/res/v1/web/search') },
    });
    const { raw, summary } = parts(await webSearchTool.run({ query: 'messenger', max_results: 2 }, ctx));
    expect(raw.backend).toBe('brave');
    expect(raw.results).toEqual([
      { title: 'Brave result 1', url: 'https://brave-result.example/1', snippet: 'About messenger number 1', date: '2024-06-02T10:00:00' },
      { title: 'Brave result 2', url: 'https://brave-result.example/2', snippet: 'About messenger number 2' },
    ]);
    const req = web.received.filter((r) => r.path === '/brave/res/v1/web/search').at(-1);
    expect(req?.headers['x-subscription-token']).toBe('brave-test-key');
    expect(summary).not.toContain('brave-test-key');
  });

  it('a rejected key is reported without the key', async () => {
    const ctx = netContext({
      allow: [`127.0.0.1:${web.port}`],
      settings: { braveApiKey: 'wrong-secret-key', braveEndpoint: web.url('/brave/res/v1/web/search') },
    });
    const err = await webSearchTool.run({ query: 'x' }, ctx).then(() => undefined, (e: Error) => e);
    expect(err?.message).toContain('Brave Search refused the API key (HTTP 401)');
    expect(err?.message).not.toContain('wrong-secret-key');
  });

  it('falls back to the next backend when the first fails', async () => {
    const ctx = netContext({
      allow: [`127.0.0.1:${web.port}`],
      settings: { searxngUrl: web.url('/nowhere'), braveApiKey: 'brave-test-key', braveEndpoint: web.url('/brave/res/v1/web/search') },
    });
    expect(parts(await webSearchTool.run({ query: 'x' }, ctx)).raw.backend).toBe('brave');
  });

  it('backend requests obey the network rules: a private SearXNG needs HERMES_NET_ALLOW', async () => {
    const before = web.hits('/searxng/search');
    const ctx = netContext({ lookup: fakeLookup({ 'searx.lan': ['127.0.0.1'] }), settings: { searxngUrl: `http://searx.lan:${web.port}/searxng` } });
    await expect(webSearchTool.run({ query: 'x' }, ctx)).rejects.toThrow(/web search failed \(searxng: refused: searx\.lan resolves to 127\.0\.0\.1, a loopback address/);
    expect(web.hits('/searxng/search')).toBe(before);
    const allowed = netContext({ allow: [`searx.lan:${web.port}`], lookup: fakeLookup({ 'searx.lan': ['127.0.0.1'] }), settings: { searxngUrl: `http://searx.lan:${web.port}/searxng` } });
    expect(parts(await webSearchTool.run({ query: 'x' }, allowed)).raw.results.length).toBe(5);
  });

  it('logs never carry the Brave key, though it was sent and the server echoed it back', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
    const key = 'log-secret-key';
    const ctx = { ...netContext({ allow: [`127.0.0.1:${web.port}`], settings: { braveApiKey: key, braveEndpoint: web.url('/brave/res/v1/web/search') } }), log };
    const before = web.received.length;
    const failure = await webSearchTool.run({ query: 'x' }, ctx).then(() => undefined, (err: Error) => err);
    expect(failure?.message).toMatch(/Brave Search refused the API key \(HTTP 401\)/);
    expect(failure?.message).not.toContain(key);
    // The key really went out, and the server's answer held it.
    const sent = web.received.slice(before).find((r) => r.path === '/brave/res/v1/web/search');
    expect(sent?.headers['x-subscription-token']).toBe(key);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(key);
  });
});
