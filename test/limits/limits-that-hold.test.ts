import { afterEach, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { calculator as calculatorTool } from '../../tools/calculator.js';
import { memoryTools } from '../../tools/memory.js';
import { fitContext } from '../../src/runtime/context/context-window.js';
import { createTokenCounter } from '../../src/runtime/context/token-counter.js';
import { MAX_TOOL_ARGS_CHARS } from '../../src/capabilities/toolkit/executor.js';
import { wellFormed } from '../../src/runtime/provider/well-formed.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';

/** Huge and deeply nested tool arguments, oversized requests, broken Unicode: each ends in a clear answer. */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  if (h) await rm(h.dataDir, { recursive: true, force: true });
  h = undefined;
});

let n = 0;
const place = conv('D5', { isDm: true });
async function ask(h: Harness, text = 'go'): Promise<string> {
  const before = h.port.texts().length;
  await h.core.gateway.handleMessage({ id: `lim-${++n}-${Date.now()}`, conversation: place, speaker: user('U5'), text, mentioned: true });
  return ((await h.port.waitForCount(isText, before + 1, 30_000)).at(-1) as { text: string }).text;
}
type Sent = { role: string; content?: string | null; tool_call_id?: string };
const toolResult = (h: Harness, id: string) => h.fake.requests.flatMap((r) => r.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === id)?.content;

describe('limits that hold', () => {
  it('refuses a 1 MB calculator expression with a clear error, and the next prompts stay within HERMES_CONTEXT_TOKENS', async () => {
    const budget = 16_000;
    h = await startHarness({ tools: [calculatorTool, ...memoryTools], env: { HERMES_CONTEXT_TOKENS: String(budget) } });
    const huge = `1+${'1+'.repeat(500_000)}1`;
    h.fake.enqueue({ toolCalls: [{ id: 'c_big', name: 'calculator', arguments: { expression: huge } }] }, { text: 'That was too long.' });
    expect(await ask(h)).toBe('That was too long.');
    expect(toolResult(h, 'c_big')).toMatch(/calculator did not run: its arguments are \d+ characters long, and one call may carry at most 100000/);
    h.fake.enqueue({ toolCalls: [{ id: 'c_fact', name: 'remember_fact', arguments: { fact: 'x'.repeat(1_000_000) } }] }, { text: 'Also too long.' });
    expect(await ask(h, 'and remember this')).toBe('Also too long.');
    h.fake.enqueue({ text: 'fine' });
    await ask(h, 'and now?');
    // Bytes bound tokens from above: every request after the huge calls fits the budget.
    for (const req of h.fake.requests.slice(1)) expect(Buffer.byteLength(JSON.stringify(req.messages))).toBeLessThan(budget);
  });

  it('counts and shrinks long tool-call arguments in history like other content', () => {
    const counter = createTokenCounter('gpt-4o-mini');
    const big = JSON.stringify({ expression: '1+'.repeat(40_000) + '1' });
    expect(big.length).toBeLessThan(MAX_TOOL_ARGS_CHARS);
    const history: ChatMessage[] = [
      { role: 'user', content: 'compute' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: big }] },
      { role: 'tool', toolCallId: 'c1', name: 'calculator', content: '40001' },
      { role: 'assistant', content: 'It is 40001.' },
      { role: 'user', content: 'thanks, and 2+2?' },
    ];
    const fit = fitContext({ system: 'You are a test.', history, budgetTokens: 2_000, toolsTokens: 0, counter });
    expect(fit.fits).toBe(true);
    expect(fit.tokens).toBeLessThanOrEqual(2_000);
    const kept = JSON.stringify(fit.messages);
    expect(kept).not.toContain('1+1+1+1+');
    expect(kept).toContain('2+2');
  });

  it('answers 10,000-level nested arguments with a clear tool error (no stack overflow)', async () => {
    h = await startHarness({ tools: [calculatorTool] });
    const deep = `{"expression":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    h.fake.enqueue({ toolCalls: [{ id: 'c_deep', name: 'calculator', arguments: deep }] }, { text: 'Nested too deep.' });
    expect(await ask(h)).toBe('Nested too deep.');
    expect(toolResult(h, 'c_deep')).toMatch(/calculator did not run: its arguments are nested more than 64 levels deep/);
  });

  it('names the real cause when the model server refuses the request as too large (413, and 400 context length)', async () => {
    h = await startHarness();
    h.fake.enqueue({ status: 413, body: { error: { message: 'Request Entity Too Large' } } });
    expect(await ask(h)).toMatch(/grown too large for the language model[\s\S]*\/hermes new[\s\S]*HERMES_CONTEXT_TOKENS/);
    h.fake.enqueue({ status: 400, body: { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens." } } });
    const said = await ask(h, 'again');
    expect(said).toMatch(/too large[\s\S]*maximum context length is 8192/);
    expect(said).not.toMatch(/operator needs to fix the model settings/);
  });

  it('replaces a lone surrogate in a reply with U+FFFD and keeps the next character', async () => {
    expect(wellFormed('ab\uD800cd \uDC00ef \uD83D\uDE00')).toBe('ab\uFFFDcd \uFFFDef \uD83D\uDE00');
    h = await startHarness();
    h.fake.enqueue({ text: 'ab\uD800cd and \uDC00ef' });
    expect(await ask(h)).toBe('ab\uFFFDcd and \uFFFDef');
  });
});
