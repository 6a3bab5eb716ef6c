import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effectOf, gatedByOutsideText, outsideSourcesIn, requestText, resultsOf, urlCarriesNewData } from '../../src/capabilities/toolkit/outside-gate.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import type { ChatMessage } from '../../src/basics/types.js';

const speaker = { platform: 'slack' as const, workspaceId: 'T', userId: 'U1' };

describe('outside gate', () => {
  it('collects sources from user and tool messages, in order, once each', () => {
    const msgs: ChatMessage[] = [
      { role: 'user', content: 'ctx', outsideSource: 'thread context' },
      { role: 'user', content: 'hi', speaker },
      { role: 'tool', toolCallId: 'a', name: 'fetch_url', content: 'x', outsideSource: 'https://a.example/' },
      { role: 'tool', toolCallId: 'b', name: 'fetch_url', content: 'y', outsideSource: 'thread context' },
      { role: 'tool', toolCallId: 'c', name: 'calculator', content: '4' },
    ];
    expect(outsideSourcesIn(msgs)).toEqual(['thread context', 'https://a.example/']);
    expect(requestText(msgs)).toBe('hi');
  });

  it('the operator setting wins over the tool; a throwing rule counts as outward', () => {
    const tool = defineTool({ name: 't', description: 'd', input: z.object({}), effect: () => { throw new Error('x'); }, run: async () => 'ok' });
    expect(effectOf(tool, {}, undefined, { userText: '', seen: [] })).toBe('outward');
    expect(effectOf(tool, {}, 'none', { userText: '', seen: [] })).toBe('none');
    const plain = defineTool({ name: 'p', description: 'd', input: z.object({}), run: async () => 'ok' });
    expect(effectOf(plain, {}, undefined, { userText: '', seen: [] })).toBe('none');
    expect(gatedByOutsideText('durable', ['x'])).toBe(true);
    expect(gatedByOutsideText('durable', [])).toBe(false);
    expect(gatedByOutsideText('none', ['x'])).toBe(false);
  });

  it('a URL carries data unless it appears whole in known text: path, host and query alike', () => {
    const user = 'please read https://a.example/docs/intro and example.org';
    expect(urlCarriesNewData('https://a.example/docs/intro', [user])).toBe(false);
    expect(urlCarriesNewData('https://a.example/docs/intro/', [user])).toBe(false); // a trailing slash adds nothing
    expect(urlCarriesNewData('https://example.org/', [user])).toBe(false); // the scheme adds nothing
    expect(urlCarriesNewData('https://a.example/exfil/secret-notes', [user])).toBe(true); // data in the path
    expect(urlCarriesNewData('https://secret-notes.a.example/', [user])).toBe(true); // data in the host
    expect(urlCarriesNewData('https://a.example/docs/intro?n=secret', [user])).toBe(true); // data in the query
    expect(urlCarriesNewData('https://a.example/docs/intro#secret', [user])).toBe(true);
    expect(urlCarriesNewData('https://a.example/docs/in', [user])).toBe(true); // a prefix of a longer link is not that link
    expect(urlCarriesNewData('https://a.example/s?q=tea%20time', ['see https://a.example/s?q=tea time.'])).toBe(false);
    expect(urlCarriesNewData('not a url', [user])).toBe(true);
    // A link a page gave (html-to-text writes "text (url)") is known.
    expect(urlCarriesNewData('https://b.example/next', [user, 'More on this (https://b.example/next)'])).toBe(false);
  });

  it('collects the results of the named tools only', () => {
    const msgs: ChatMessage[] = [
      { role: 'tool', toolCallId: 'a', name: 'fetch_url', content: 'page', outsideSource: 'https://a.example/' },
      { role: 'tool', toolCallId: 'b', name: 'mcp__x__echo', content: 'echoed https://evil.example/secret', outsideSource: 'mcp' },
    ];
    expect(resultsOf(msgs, ['fetch_url', 'web_search'])).toEqual(['page']);
  });
});
