import { describe, expect, it } from 'vitest';
import { createTokenCounter, encodingForModelName, estimateTokens, MESSAGE_OVERHEAD, REPLY_PRIMING } from '../../src/runtime/context/token-counter.js';
import type { ChatMessage } from '../../src/basics/types.js';

describe('encodingForModelName', () => {
  it('maps OpenAI model families to their tokenizer and everything else to the estimate', () => {
    for (const m of ['gpt-4o', 'gpt-4o-mini', 'openai/gpt-4.1-mini', 'gpt-5', 'o1', 'o3-mini', 'o4-mini', 'chatgpt-4o-latest', 'gpt-oss-20b']) {
      expect(encodingForModelName(m), m).toBe('o200k_base');
    }
    for (const m of ['gpt-4', 'gpt-4-turbo', 'gpt-3.5-turbo', 'GPT-4-0613']) expect(encodingForModelName(m), m).toBe('cl100k_base');
    for (const m of ['llama3.1:8b', 'qwen2.5', 'NousResearch/Hermes-3-Llama-3.1-8B', 'mistral', 'o1x', 'fake-model', '']) {
      expect(encodingForModelName(m), m).toBe('estimate');
    }
  });
});

describe('createTokenCounter', () => {
  it('counts with o200k_base for gpt-4o', () => {
    const c = createTokenCounter('gpt-4o');
    expect(c.encoding).toBe('o200k_base');
    expect(c.count('hello world')).toBe(2);
    expect(c.count('tiktoken is great!')).toBe(6);
    // o200k has whole-word CJK tokens that cl100k lacks: this tells the two encodings apart.
    expect(c.count('你好世界')).toBe(2);
    expect(c.count('')).toBe(0);
  });

  it('counts with cl100k_base for gpt-4', () => {
    const c = createTokenCounter('gpt-4');
    expect(c.encoding).toBe('cl100k_base');
    expect(c.count('hello world')).toBe(2);
    expect(c.count('tiktoken is great!')).toBe(6);
    expect(c.count('你好世界')).toBe(5);
  });

  it('estimates conservatively for unknown models', () => {
    const c = createTokenCounter('llama3');
    expect(c.encoding).toBe('estimate');
    expect(c.count('abcdefg')).toBe(2); // 7 / 3.5
    expect(c.count('你好')).toBe(2); // one per non-ASCII unit
    expect(estimateTokens('a'.repeat(35))).toBe(10);
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(50);
    expect(c.count(text)).toBeGreaterThanOrEqual(createTokenCounter('gpt-4o').count(text));
  });

  it('treats special-token text typed by a user as plain text', () => {
    const c = createTokenCounter('gpt-4o');
    expect(c.count('<|endoftext|>')).toBeGreaterThan(1);
  });

  // Unchunked, js-tiktoken's merge is quadratic: 40,000 "x" take minutes (8,000 take ~6 s), so the
  // timeout is the guard; chunked they take milliseconds. No clock is read: speed is the bench's.
  it('counts pathological unbroken runs in short chunks, never undercounting', { timeout: 60_000 }, () => {
    const c = createTokenCounter('gpt-4o');
    const long = 'x'.repeat(40_000);
    const n = c.count(long);
    const punct = c.count('='.repeat(40_000));
    // A run of one letter counts as the sum of its chunks.
    expect(n).toBe(1_250 * c.count('x'.repeat(32)));
    // o200k merges at most a handful of "x" per token; chunking may only add tokens.
    expect(n).toBeGreaterThanOrEqual(40_000 / 16);
    expect(punct).toBeGreaterThan(0);
    expect(c.count(long)).toBe(n); // cached and stable
  });

  it('adds per-message framing and counts tool calls by name and arguments', () => {
    const c = createTokenCounter('gpt-4o');
    const user: ChatMessage = { role: 'user', content: 'What time is it in Tokyo?' };
    expect(c.countMessage(user)).toBe(MESSAGE_OVERHEAD + c.count(user.content));
    expect(c.countMessages([])).toBe(REPLY_PRIMING);
    const bare: ChatMessage = { role: 'assistant', content: null };
    const withCall: ChatMessage = {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'call_1', name: 'get_current_time', arguments: '{"timezone":"Asia/Tokyo"}' }],
    };
    expect(c.countMessage(withCall) - c.countMessage(bare)).toBeGreaterThanOrEqual(c.count('get_current_time') + c.count('{"timezone":"Asia/Tokyo"}'));
    const tool: ChatMessage = { role: 'tool', toolCallId: 'call_1', name: 'get_current_time', content: '2026-01-01T09:00:00+09:00' };
    expect(c.countMessages([user, withCall, tool])).toBe(REPLY_PRIMING + c.countMessage(user) + c.countMessage(withCall) + c.countMessage(tool));
    const tagged: ChatMessage = { ...user, speaker: { platform: 'slack', workspaceId: 'T1', userId: 'U1', displayName: 'Ada Lovelace' } };
    expect(c.countMessage(tagged)).toBeGreaterThan(c.countMessage(user));
  });

  it('counts tool specs, more for bigger schemas', () => {
    const c = createTokenCounter('gpt-4o');
    const small = { name: 'calculator', description: 'Evaluate arithmetic.', parameters: { type: 'object', properties: { expression: { type: 'string' } } } };
    const big = { ...small, description: 'Evaluate arithmetic. '.repeat(20) };
    expect(c.countTools([])).toBe(0);
    expect(c.countTools([small])).toBeGreaterThan(c.count(JSON.stringify(small.parameters)));
    expect(c.countTools([big])).toBeGreaterThan(c.countTools([small]));
    expect(c.countTools([small, big])).toBe(c.countTools([small]) + c.countTools([big]));
  });

  it('counts a 200-turn conversation quickly', () => {
    const c = createTokenCounter('gpt-4o');
    const msgs: ChatMessage[] = [];
    for (let i = 0; i < 200; i++) {
      msgs.push({ role: 'user', content: `Question ${i}: summarise report number ${i} for the team.` });
      msgs.push({ role: 'assistant', content: null, toolCalls: [{ id: `c${i}`, name: 'fetch_url', arguments: `{"url":"https://example.com/${i}"}` }] });
      msgs.push({ role: 'tool', toolCallId: `c${i}`, name: 'fetch_url', content: `Report ${i}. `.repeat(800) });
      msgs.push({ role: 'assistant', content: `Report ${i} says things are fine.` });
    }
    const t0 = Date.now();
    const first = c.countMessages(msgs);
    const t1 = Date.now();
    for (let k = 0; k < 20; k++) expect(c.countMessages(msgs)).toBe(first);
    const t2 = Date.now();
    expect(first).toBeGreaterThan(200 * 800 * 3);
    expect(t1 - t0).toBeLessThan(10_000);
    expect((t2 - t1) / 20).toBeLessThan(50); // recounting the same history hits the cache
  });
});
