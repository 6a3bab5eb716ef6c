import { describe, expect, it } from 'vitest';
import { fitContext, toolResultStub, SUMMARY_HEADING } from '../../src/runtime/context/context-window.js';
import { SUMMARY_SEARCH_NOTE } from '../../src/runtime/context/summarizer.js';
import { createTokenCounter } from '../../src/runtime/context/token-counter.js';
import { pairToolMessages, turnStarts } from '../../src/runtime/context/turns.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { expectValidRequest, randomHistory, rng, words } from './history-fixtures.js';

const counter = createTokenCounter('gpt-4o');
const SYSTEM = 'You are hermes, a helpful agent.';

function lastUserContent(h: ChatMessage[]): string {
  const m = [...h].reverse().find((x) => x.role === 'user');
  return m?.role === 'user' ? m.content : '';
}

function turn(i: number, resultChars: number): ChatMessage[] {
  return [
    { role: 'user', content: `question ${i}` },
    { role: 'assistant', content: null, toolCalls: [{ id: `c${i}`, name: 'fetch_url', arguments: `{"url":"https://example.com/${i}"}` }] },
    { role: 'tool', toolCallId: `c${i}`, name: 'fetch_url', content: words(rng(i), resultChars) },
    { role: 'assistant', content: `answer ${i}` },
  ];
}

describe('fitContext', () => {
  it('sends everything untouched when it fits', () => {
    const history = [...turn(1, 300), ...turn(2, 300), { role: 'user' as const, content: 'and now?' }];
    const r = fitContext({ system: SYSTEM, history, budgetTokens: 10_000, toolsTokens: 100, counter });
    expect(r.fits).toBe(true);
    expect(r.overflow).toEqual([]);
    expect(r.stubbedToolResults).toBe(0);
    expect(r.messages).toEqual([{ role: 'system', content: SYSTEM }, ...history]);
    expect(r.tokens).toBeGreaterThanOrEqual(counter.countMessages(r.messages) + 100);
    expect(r.tokens).toBeLessThanOrEqual(10_000);
  });

  it('does not tokenize at all when the UTF-8 byte bound already fits', () => {
    const history = [...turn(1, 300), { role: 'user' as const, content: 'héllo, 世界' }];
    const refusing = { ...counter, count: () => { throw new Error('tokenized'); }, countMessage: () => { throw new Error('tokenized'); }, countMessages: () => { throw new Error('tokenized'); } };
    const r = fitContext({ system: SYSTEM, history, budgetTokens: 10_000, toolsTokens: 100, counter: refusing });
    expect(r.fits).toBe(true);
    expect(r.messages).toEqual([{ role: 'system', content: SYSTEM }, ...history]);
    const bytes = [SYSTEM, ...history.map((m) => JSON.stringify(m))].reduce((n, t) => n + Buffer.byteLength(t), 0);
    expect(r.tokens).toBeLessThanOrEqual(bytes + 100 + 4 * 6 + 3);
    expect(r.tokens).toBeGreaterThanOrEqual(counter.countMessages(r.messages) + 100);
  });

  it('stubs old tool results first, oldest first, and keeps the latest turn intact', () => {
    const history = [...turn(1, 4000), ...turn(2, 4000), ...turn(3, 4000), { role: 'user' as const, content: 'and now?' }, ...turn(4, 4000).slice(1)];
    const full = counter.countMessages([{ role: 'system', content: SYSTEM }, ...history]);
    // Room for everything but about one and a half old results.
    const budget = full - Math.floor(counter.count(words(rng(1), 4000)) * 1.5);
    const r = fitContext({ system: SYSTEM, history, budgetTokens: budget, toolsTokens: 0, counter });
    expect(r.fits).toBe(true);
    expect(r.overflow).toEqual([]);
    expect(r.stubbedToolResults).toBe(2);
    const tools = r.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual([toolResultStub(4000), toolResultStub(4000), words(rng(3), 4000), words(rng(4), 4000)]);
    expectValidRequest(r.messages, { system: SYSTEM, budget, tokens: r.tokens, fits: r.fits, counter, toolsTokens: 0, latestUser: 'and now?' });
  });

  it('moves the oldest whole turns into overflow when stubs are not enough', () => {
    const history: ChatMessage[] = [];
    for (let i = 0; i < 30; i++) history.push(...turn(i, 200), { role: 'assistant', content: words(rng(100 + i), 800) });
    history.push({ role: 'user', content: 'what did we decide?' });
    const budget = 1500;
    const r = fitContext({ system: SYSTEM, history, budgetTokens: budget, toolsTokens: 50, counter });
    expect(r.fits).toBe(true);
    expect(r.overflow.length).toBeGreaterThan(0);
    expect(r.overflow).toEqual(history.slice(0, r.overflow.length)); // a prefix, original content
    expect(history[r.overflow.length]?.role).toBe('user'); // cut at a turn start
    expect(r.messages.length - 1).toBeLessThanOrEqual(history.length - r.overflow.length);
    expectValidRequest(r.messages, { system: SYSTEM, budget, tokens: r.tokens, fits: r.fits, counter, toolsTokens: 50, latestUser: 'what did we decide?' });
  });

  it('gives room back to stubbed results once old turns are gone', () => {
    // The oldest turn's long answer cannot be stubbed, so stubbing everything is not enough and it
    // must go; after that the newer results fit verbatim again.
    const history: ChatMessage[] = [...turn(0, 2000), { role: 'assistant', content: words(rng(50), 20_000) }];
    for (let i = 1; i <= 3; i++) history.push(...turn(i, 2000));
    history.push({ role: 'user', content: 'next' });
    const sys: ChatMessage = { role: 'system', content: SYSTEM };
    const budget = counter.countMessages([sys, ...history.slice(5)]) + 5;
    const r = fitContext({ system: SYSTEM, history, budgetTokens: budget, toolsTokens: 0, counter });
    expect(r.fits).toBe(true);
    expect(r.overflow).toEqual(history.slice(0, 5));
    expect(r.stubbedToolResults).toBe(0);
    expect(r.messages.slice(1)).toEqual(history.slice(5));
  });

  it('leaves no stub that could be restored within the budget', () => {
    const history: ChatMessage[] = [];
    for (let i = 0; i < 10; i++) history.push(...turn(i, 2000), { role: 'assistant', content: words(rng(50 + i), 3000) });
    history.push({ role: 'user', content: 'next' });
    const sys: ChatMessage = { role: 'system', content: SYSTEM };
    const budget = counter.countMessages([sys, ...history.slice(-11)]) + 5;
    const r = fitContext({ system: SYSTEM, history, budgetTokens: budget, toolsTokens: 0, counter });
    expect(r.fits).toBe(true);
    expect(r.overflow.length).toBeGreaterThan(0);
    let stubs = 0;
    for (const m of r.messages) {
      if (m.role !== 'tool' || !m.content.startsWith('[tool result removed')) continue;
      stubs++;
      const orig = history.find((o) => o.role === 'tool' && o.toolCallId === m.toolCallId)!;
      expect(r.tokens - counter.countMessage(m) + counter.countMessage(orig)).toBeGreaterThan(budget);
    }
    expect(stubs).toBe(r.stubbedToolResults);
  });

  it('folds the summary into the one system message', () => {
    const r = fitContext({ system: SYSTEM, summary: '- Ada asked for the Q3 report.', history: [{ role: 'user', content: 'hi' }], budgetTokens: 1000, toolsTokens: 0, counter });
    expect(r.messages[0]).toEqual({ role: 'system', content: `${SYSTEM}\n\n${SUMMARY_HEADING}\n${SUMMARY_SEARCH_NOTE}\n- Ada asked for the Q3 report.` });
    expect(r.messages.filter((m) => m.role === 'system')).toHaveLength(1);
  });

  it("stubs the latest turn's own results when only that turn is left", () => {
    const history: ChatMessage[] = [{ role: 'user', content: 'compare the three pages' }];
    for (let i = 0; i < 3; i++) {
      history.push({ role: 'assistant', content: null, toolCalls: [{ id: `k${i}`, name: 'fetch_url', arguments: '{}' }] });
      history.push({ role: 'tool', toolCallId: `k${i}`, name: 'fetch_url', content: words(rng(i), 6000) });
    }
    const r = fitContext({ system: SYSTEM, history, budgetTokens: 1200, toolsTokens: 0, counter });
    expect(r.fits).toBe(true);
    expect(r.overflow).toEqual([]);
    expect(r.stubbedToolResults).toBeGreaterThanOrEqual(2);
    expectValidRequest(r.messages, { system: SYSTEM, budget: 1200, tokens: r.tokens, fits: r.fits, counter, toolsTokens: 0, latestUser: 'compare the three pages' });
  });

  it('truncates a huge latest user message with a marker instead of failing', () => {
    const huge = words(rng(7), 60_000);
    const history = [...turn(1, 500), { role: 'user' as const, content: huge }];
    const r = fitContext({ system: SYSTEM, history, budgetTokens: 2000, toolsTokens: 200, counter });
    expect(r.fits).toBe(true);
    expect(r.tokens).toBeLessThanOrEqual(2000);
    expect(r.tokens).toBeGreaterThan(1900); // it kept as much as would fit
    const last = r.messages[r.messages.length - 1]!;
    expect(last.role === 'user' && last.content.includes('[message truncated to fit the context window: kept')).toBe(true);
    expectValidRequest(r.messages, { system: SYSTEM, budget: 2000, tokens: r.tokens, fits: r.fits, counter, toolsTokens: 200, latestUser: huge });
  });

  it('keeps the system prompt and reports fits=false when even that exceeds the budget', () => {
    const system = words(rng(9), 5000);
    const r = fitContext({ system, history: [{ role: 'user', content: 'hi' }], budgetTokens: 100, toolsTokens: 0, counter });
    expect(r.fits).toBe(false);
    expect(r.messages[0]).toEqual({ role: 'system', content: system });
    expect(r.messages[r.messages.length - 1]).toEqual({ role: 'user', content: 'hi' }); // not "cut" into something longer
  });

  it('never splits a call from a result that arrived after a newer user message', () => {
    const history: ChatMessage[] = [
      { role: 'user', content: 'send the webhook' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'w1', name: 'send_webhook', arguments: '{}' }] },
      { role: 'user', content: 'actually, wait' },
      { role: 'tool', toolCallId: 'w1', name: 'send_webhook', content: 'The action did not run.' },
      { role: 'assistant', content: 'ok, cancelled' },
      { role: 'user', content: 'thanks' },
    ];
    expect(turnStarts(history)).toEqual([0, 5]);
    expect(pairToolMessages(history).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant', 'user']);
    const budget = counter.countMessages([{ role: 'system', content: SYSTEM }, ...history]) - 1;
    const r = fitContext({ system: SYSTEM, history, budgetTokens: budget, toolsTokens: 0, counter });
    expect(r.overflow).toHaveLength(5);
    expect(r.messages.slice(1)).toEqual([{ role: 'user', content: 'thanks' }]);
  });

  it('drops orphan results and unanswered calls from any input', () => {
    const history: ChatMessage[] = [
      { role: 'tool', toolCallId: 'gone', name: 'fetch_url', content: 'result of a summarised call' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'checking', toolCalls: [{ id: 'a', name: 'calculator', arguments: '{}' }, { id: 'b', name: 'calculator', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'a', name: 'calculator', content: '4' },
      { role: 'tool', toolCallId: 'a', name: 'calculator', content: 'duplicate' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'crashed', name: 'calculator', arguments: '{}' }] },
      { role: 'user', content: 'again?' },
    ];
    const r = fitContext({ system: SYSTEM, history, budgetTokens: 10_000, toolsTokens: 0, counter });
    expect(r.messages.slice(1)).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'checking', toolCalls: [{ id: 'a', name: 'calculator', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'a', name: 'calculator', content: '4' },
      { role: 'user', content: 'again?' },
    ]);
  });

  it('keeps every invariant on many random histories and budgets', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rand = rng(seed);
      const history = randomHistory(rand, { turns: 1 + Math.floor(rand() * 12), maxResult: 2000, messy: seed % 3 === 0 });
      const budget = 150 + Math.floor(rand() * 4000);
      const toolsTokens = Math.floor(rand() * 100);
      const r = fitContext({ system: SYSTEM, summary: seed % 2 ? 'earlier: things happened' : undefined, history, budgetTokens: budget, toolsTokens, counter, keepRecentToolResults: seed % 4 });
      const ctx = `seed ${seed}`;
      expect(r.fits, ctx).toBe(true); // every budget here leaves room for system + a truncated question
      expectValidRequest(r.messages, { system: SYSTEM, budget, tokens: r.tokens, fits: r.fits, counter, toolsTokens, latestUser: lastUserContent(history) });
      expect(r.overflow, ctx).toEqual(history.slice(0, r.overflow.length));
      expect(turnStarts(history).includes(r.overflow.length) || r.overflow.length === 0, ctx).toBe(true);
      expect(r.stubbedToolResults, ctx).toBe(r.messages.filter((m) => m.role === 'tool' && /^\[tool result removed to save space: \d+ chars\]$/.test(m.content)).length);
      // Nothing kept that was not in the history after the overflow (content equal, a stub, or the truncated question).
      const rest = history.slice(r.overflow.length);
      const restJson = new Set(rest.map((o) => JSON.stringify(o)));
      for (const m of r.messages.slice(1)) {
        const same = restJson.has(JSON.stringify(m));
        const stubbed = m.role === 'tool' && rest.some((o) => o.role === 'tool' && o.toolCallId === m.toolCallId);
        const trimmedCalls = m.role === 'assistant' && rest.some((o) => o.role === 'assistant' && o.content === m.content);
        const truncated = m.role === 'user' && m.content.includes('[message truncated');
        expect(same || stubbed || trimmedCalls || truncated, `${ctx}: ${JSON.stringify(m).slice(0, 200)}`).toBe(true);
      }
    }
  });
});
