import { describe, expect, it } from 'vitest';
import { figuresIn, ungroundedClaims } from '../../src/agent/grounding.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { loadConfig } from '../../src/settings/load-config.js';

const system: ChatMessage = { role: 'system', content: 'You are hermes. The current time is 2026-12-02T15:25Z (UTC).' };
const ask = (text: string): ChatMessage[] => [system, { role: 'user', content: text }];

describe('figuresIn', () => {
  it('finds prices, shares, decimals, long numbers, times, dates and links', () => {
    expect(figuresIn('BTC is $97,412.50 (up 3.2%) at 14:05, see https://example.com/btc.')).toEqual(['$97,412.50', '3.2%', '14:05', 'https://example.com/btc']);
    expect(figuresIn('The train leaves at 5pm on 3 March 2027; 1024 seats, 12/03/2027.')).toEqual(['5pm', '3 March 2027', '1024', '12/03/2027']);
    expect(figuresIn('Released December 2, 2026 with 1,200 fixes')).toEqual(['December 2, 2026', '1,200']);
  });

  it('ignores small counts, list numbering, bare years and code', () => {
    expect(figuresIn('1. Open the file\n2. Change 3 lines\n10. Done in 1969 style')).toEqual([]);
    expect(figuresIn('Run `curl https://x.example/api?page=200` or:\n```\nsleep 3600\n```\nthen wait 2 minutes.')).toEqual([]);
  });

  it('ignores the ids in mention markup for people, roles and channels, not the figures beside them', () => {
    expect(figuresIn('Heads up <@100000000000000011>, <@!100000000000000012>, <@&555> in <#300000000000000003>')).toEqual([]);
    expect(figuresIn('<@100000000000000011> it costs $12.50')).toEqual(['$12.50']);
  });
});

describe('ungroundedClaims', () => {
  it('names figures that no message contains', () => {
    expect(ungroundedClaims('Bitcoin trades at $97,412 right now.', ask('what is bitcoin at?'))).toEqual(['$97,412']);
    expect(ungroundedClaims('It is 09:14 in Tokyo.', ask('what time is it in Tokyo?'))).toEqual(['09:14']);
    expect(ungroundedClaims('The docs are at https://docs.example.org/v2/guide', ask('where are the docs?'))).toEqual(['https://docs.example.org/v2/guide']);
  });

  it('does not raise figures the user wrote, in another spelling too', () => {
    expect(ungroundedClaims('Yes, 1,024 is 2^10, and $12.50 plus 15% tip is fine.', ask('is 1024 2^10? and 12.50 dollars with a 15 % tip?'))).toEqual([]);
    expect(ungroundedClaims('See https://example.com/a/ for that.', ask('is https://example.com/a the page?'))).toEqual([]);
  });

  it('takes tool results, earlier answers and tool-call arguments as sources', () => {
    const messages: ChatMessage[] = [
      ...ask('weather?'),
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'fetch_url', arguments: '{"url":"https://wx.example/today"}' }] },
      { role: 'tool', toolCallId: 'c1', name: 'fetch_url', content: 'High 21.5 C, sunset 16:42' },
    ];
    expect(ungroundedClaims('High of 21.5 today, sunset at 16:42 (https://wx.example/today).', messages)).toEqual([]);
  });

  it("accepts today's date and time from the system prompt, in words too", () => {
    expect(ungroundedClaims('Today is 2 December 2026, and it is 15:25 UTC.', ask('what day is it?'))).toEqual([]);
    expect(ungroundedClaims('Today is December 2, 2026.', ask('what day is it?'))).toEqual([]);
  });

  it('names at most five, each once', () => {
    const answer = 'Prices: 101, 102, 103, 101, 104, 105, 106.';
    expect(ungroundedClaims(answer, ask('prices?'))).toEqual(['101', '102', '103', '104', '105']);
  });

  it('finds nothing in an answer without figures', () => {
    expect(ungroundedClaims('I could not find that; shall I search the web?', ask('find the price'))).toEqual([]);
  });
});

describe('HERMES_GROUNDING', () => {
  const base = { OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_API_KEY: 'k', HERMES_MODEL: 'm' };
  it('defaults to retry, takes off, and refuses anything else with one clear line', () => {
    const dflt = loadConfig(base, '/tmp');
    expect(dflt.ok && dflt.config.limits.grounding).toBe('retry');
    const off = loadConfig({ ...base, HERMES_GROUNDING: 'off' }, '/tmp');
    expect(off.ok && off.config.limits.grounding).toBe('off');
    const bad = loadConfig({ ...base, HERMES_GROUNDING: 'maybe' }, '/tmp');
    expect(bad.ok).toBe(false);
    expect(bad.ok ? [] : bad.errors).toEqual([expect.stringMatching(/HERMES_GROUNDING.*"retry".*"off"/)]);
  });
});
