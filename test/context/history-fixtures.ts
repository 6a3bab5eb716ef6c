import { expect } from 'vitest';
import type { ChatMessage } from '../../src/basics/types.js';
import type { TokenCounter } from '../../src/runtime/context/token-counter.js';
import { SUMMARY_HEADING } from '../../src/runtime/context/context-window.js';
import { SUMMARY_SEARCH_NOTE } from '../../src/runtime/context/summarizer.js';

/** Small deterministic PRNG (mulberry32) so a failing random history can be replayed from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = 'alpha beta gamma delta report deploy server invoice Berlin Tokyo 42 1999 cache queue latency budget the a of and'.split(' ');

export function words(rand: () => number, chars: number): string {
  let s = '';
  while (s.length < chars) s += WORDS[Math.floor(rand() * WORDS.length)] + ' ';
  return s.slice(0, chars);
}

/**
 * A random session history: turns of a user message, 0-3 tool steps (1-3 calls each, results of
 * random size) and an answer. With `messy`, also the shapes real sessions end up with: a result
 * that arrives after a newer user message, a call whose result never came (crash), an orphan result.
 */
export function randomHistory(rand: () => number, opts: { turns: number; maxResult: number; messy?: boolean }): ChatMessage[] {
  const h: ChatMessage[] = [];
  let callN = 0;
  if (opts.messy && rand() < 0.2) h.push({ role: 'tool', toolCallId: 'ghost', name: 'fetch_url', content: 'orphan' });
  for (let t = 0; t < opts.turns; t++) {
    h.push({ role: 'user', content: `turn ${t}: ${words(rand, 20 + Math.floor(rand() * 200))}`, speaker: { platform: 'slack', workspaceId: 'T1', userId: rand() < 0.5 ? 'U1' : 'U2' } });
    const steps = Math.floor(rand() * 4);
    for (let s = 0; s < steps; s++) {
      const n = 1 + Math.floor(rand() * 3);
      const calls = Array.from({ length: n }, () => ({ id: `call_${callN++}`, name: 'fetch_url', arguments: `{"url":"https://example.com/${callN}"}` }));
      h.push({ role: 'assistant', content: rand() < 0.3 ? 'Let me look.' : null, toolCalls: calls });
      for (const c of calls) {
        if (opts.messy && rand() < 0.05) continue; // crashed before the result was stored
        const result: ChatMessage = { role: 'tool', toolCallId: c.id, name: c.name, content: words(rand, 10 + Math.floor(rand() * opts.maxResult)) };
        if (opts.messy && rand() < 0.05 && t + 1 < opts.turns) {
          // An approval decided after the next message arrived: its result lands after that message.
          h.push({ role: 'user', content: `interjection ${t}` });
        }
        h.push(result);
      }
    }
    h.push({ role: 'assistant', content: `answer ${t}: ${words(rand, 30 + Math.floor(rand() * 300))}` });
  }
  // The current turn: a fresh user message the model must see.
  h.push({ role: 'user', content: `latest question: ${words(rand, 10 + Math.floor(rand() * 300))}` });
  return h;
}

/** Every invariant a request sent to an OpenAI-compatible server must keep. Returns the kept history. */
export function expectValidRequest(messages: ChatMessage[], opts: { system: string; budget: number; tokens: number; fits: boolean; counter: TokenCounter; toolsTokens: number; latestUser?: string }): void {
  const [first, ...rest] = messages;
  expect(first?.role).toBe('system');
  expect(first?.role === 'system' && first.content.startsWith(opts.system)).toBe(true);
  expect(rest.some((m) => m.role === 'system')).toBe(false);
  expect(rest[0]?.role).not.toBe('tool');
  for (let i = 0; i < rest.length; i++) {
    const m = rest[i]!;
    if (m.role === 'assistant' && m.toolCalls) {
      expect(m.toolCalls.length).toBeGreaterThan(0);
      // The results follow directly, one per call, in call order.
      const results = rest.slice(i + 1, i + 1 + m.toolCalls.length);
      expect(results.map((r) => (r.role === 'tool' ? r.toolCallId : `not a tool: ${r.role}`))).toEqual(m.toolCalls.map((c) => c.id));
    }
    if (m.role === 'tool') {
      let j = i - 1;
      while (j >= 0 && rest[j]!.role === 'tool') j--;
      const caller = rest[j];
      expect(caller?.role === 'assistant' && (caller.toolCalls ?? []).some((c) => c.id === m.toolCallId)).toBe(true);
    }
  }
  // Exact when trimming was needed; otherwise the byte bound, which is never below the real count.
  expect(opts.tokens).toBeGreaterThanOrEqual(opts.counter.countMessages(messages) + opts.toolsTokens);
  if (opts.fits) expect(opts.tokens).toBeLessThanOrEqual(opts.budget);
  if (opts.latestUser !== undefined) {
    const lastUser = [...rest].reverse().find((m) => m.role === 'user');
    expect(lastUser).toBeDefined();
    const content = lastUser!.role === 'user' ? lastUser!.content : '';
    if (content !== opts.latestUser) {
      expect(content).toMatch(/\[message truncated to fit the context window: kept \d+ of \d+ characters\]$/);
      expect(opts.latestUser.startsWith(content.replace(/\n\[message truncated[^\]]*\]$/, ''))).toBe(true);
    }
  }
}

export function summaryOf(messages: ChatMessage[]): string | undefined {
  const sys = messages[0];
  if (sys?.role !== 'system') return undefined;
  const at = sys.content.indexOf(SUMMARY_HEADING);
  if (at < 0) return undefined;
  const body = sys.content.slice(at + SUMMARY_HEADING.length).trim();
  return body.startsWith(SUMMARY_SEARCH_NOTE) ? body.slice(SUMMARY_SEARCH_NOTE.length).trim() : body;
}
