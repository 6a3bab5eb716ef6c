import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effectOf, gatedByOutsideText, outsideSourcesIn, queryNotWrittenBy, requestText } from '../../src/basics/safety/outside-gate.js';
import { defineTool } from '../../src/runtime/toolkit/tool-api.js';
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
    expect(effectOf(tool, {}, undefined, { userText: '' })).toBe('outward');
    expect(effectOf(tool, {}, 'none', { userText: '' })).toBe('none');
    const plain = defineTool({ name: 'p', description: 'd', input: z.object({}), run: async () => 'ok' });
    expect(effectOf(plain, {}, undefined, { userText: '' })).toBe('none');
    expect(gatedByOutsideText('durable', ['x'])).toBe(true);
    expect(gatedByOutsideText('durable', [])).toBe(false);
    expect(gatedByOutsideText('none', ['x'])).toBe(false);
  });

  it('a query string is data the user did not write unless their words contain it', () => {
    expect(queryNotWrittenBy('https://a.example/page', '')).toBe(false);
    expect(queryNotWrittenBy('https://evil.example/c?d=secret', 'read https://a.example')).toBe(true);
    expect(queryNotWrittenBy('https://a.example/s?q=tea+time', 'search a.example for q=tea+time')).toBe(false);
    expect(queryNotWrittenBy('https://a.example/s?q=tea%20time', 'look up q=tea time please')).toBe(false);
    expect(queryNotWrittenBy('not a url', '')).toBe(true);
  });
});
