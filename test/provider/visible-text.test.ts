import { describe, expect, it } from 'vitest';
import { createVisibleTextFilter, type VisibleTextMode } from '../../src/runtime/provider/visible-text.js';
import { hasHermesToolCalls, parseBareJsonToolCalls, parseHermesToolCalls, parseJsonModeAnswer, stripThinking } from '../../src/runtime/provider/tool-text.js';
import { blankToNull } from '../../src/basics/values.js';

const TOOLS: VisibleTextMode = { kind: 'native', toolNames: new Set(['calculator', 'fetch_url']) };
const NO_TOOLS: VisibleTextMode = { kind: 'native', toolNames: new Set() };

/** Feeds the chunks; returns what each push released. */
function feed(mode: VisibleTextMode, chunks: string[]): string[] {
  const f = createVisibleTextFilter(mode);
  return chunks.map((c) => f.push(c));
}

/** Every way of cutting `text` into two pieces, plus one character at a time. */
function splits(text: string): string[][] {
  const out: string[][] = [[...text]];
  for (let i = 0; i <= text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

/** What the complete answer's visible content is, by the same rules the provider applies. */
function finalContent(text: string, mode: VisibleTextMode): string | null {
  const cleaned = blankToNull(stripThinking(text));
  if (mode.kind === 'json') return parseJsonModeAnswer(cleaned ?? '', undefined, new Set()).content;
  if (cleaned !== null && hasHermesToolCalls(cleaned)) return parseHermesToolCalls(cleaned).content;
  const bare = cleaned !== null && mode.toolNames.size > 0 ? parseBareJsonToolCalls(cleaned, mode.toolNames) : null;
  return bare ? bare.content : cleaned;
}

const CALL_JSON = '{"name": "calculator", "arguments": {"expression": "2+2"}}';

describe('visible text filter: nothing that may be a tool call is shown', () => {
  const answers: Array<[string, string]> = [
    ['plain prose', 'The answer is 4.\n\nSee you.'],
    ['hermes block between prose', `Let me check.\n<tool_call>\n${CALL_JSON}\n</tool_call>\nDone.`],
    ['hermes block only', `<tool_call>${CALL_JSON}</tool_call>`],
    ['unclosed hermes block', `Checking <tool_call>${CALL_JSON}`],
    ['two blocks', `<tool_call>${CALL_JSON}</tool_call><tool_call>${CALL_JSON}</tool_call>`],
    ['thinking first', '<think>the user wants 4 <tool_call> maybe</think>\n\nIt is 4.'],
    ['bare JSON call', `  ${CALL_JSON}  `],
    ['bare JSON array call', `[${CALL_JSON}]`],
    ['fenced bare call', '```json\n' + CALL_JSON + '\n```'],
    ['thinking then bare call', `<think>hmm</think>\n${CALL_JSON}`],
    ['a less-than sign and html', 'a < b and <b>bold</b> and <tool>x</tool>'],
    ['json answer followed by prose', '{"a": 1} is the object you asked for.'],
    ['markdown link opening', '[the docs](https://example.com) say yes'],
    ['braces in prose', '{name} is a placeholder'],
    ['code fence of python', '```python\nprint({"a": 1})\n```\nThat prints a dict.'],
    ['fenced json followed by prose', '```json\n{"a": 1}\n```\nThat is the config.'],
    ['emoji split across chunks', 'ok 😀 done'],
  ];

  for (const [name, text] of answers) {
    it(`${name}: every split releases a prefix of the final content and no call text`, () => {
      const expected = finalContent(text, TOOLS) ?? '';
      for (const chunks of splits(text)) {
        const released = feed(TOOLS, chunks).join('');
        expect(expected.startsWith(released), `${JSON.stringify(chunks)} released ${JSON.stringify(released)}`).toBe(true);
        expect(released).not.toMatch(/tool_call|"arguments"|<think>|hmm|maybe/);
        expect(released).not.toMatch(/\uFFFD/);
      }
    });
  }

  it('streams prose as it comes, holding only trailing whitespace', () => {
    expect(feed(TOOLS, ['Hello', ' wor', 'ld.\n', '\nBye'])).toEqual(['Hello', ' wor', 'ld.', '\n\nBye']);
  });

  it('holds a "<" until it cannot be a tag, then releases it', () => {
    expect(feed(TOOLS, ['a <', 't', 'able> b'])).toEqual(['a', '', ' <table> b']);
    expect(feed(TOOLS, ['x <tool_', 'call>{"name"', '}</tool_call> y'])).toEqual(['x', '', '  y']); // as the parser joins the prose around a block
  });

  it('a tag split in every position is never shown', () => {
    const text = `Sure.<tool_call>${CALL_JSON}</tool_call>`;
    for (const chunks of splits(text)) expect(feed(TOOLS, chunks).join('')).toBe('Sure.');
  });

  it('releases a JSON-looking opening as soon as prose follows it', () => {
    const out = feed(TOOLS, ['{"a": ', '1}', ' is it']);
    expect(out).toEqual(['', '', '{"a": 1} is it']);
  });

  it('holds a complete bare call to the end (the provider decides there)', () => {
    expect(feed(TOOLS, [CALL_JSON.slice(0, 10), CALL_JSON.slice(10), '\n']).join('')).toBe('');
  });

  it('without tools offered, an opening brace is plain text', () => {
    expect(feed(NO_TOOLS, ['{"name": "x"', '}']).join('')).toBe('{"name": "x"}');
  });

  it('JSON mode releases nothing while streaming', () => {
    const text = '{"thought": "easy", "final_answer": "It is 4."}';
    for (const chunks of splits(text)) expect(feed({ kind: 'json' }, chunks).join('')).toBe('');
  });

  it('drops reasoning and resumes detection of a bare call after it', () => {
    expect(feed(TOOLS, ['<think>a', ' b</th', 'ink>\n\n', 'Four.']).join('')).toBe('Four.');
  });

  it('keeps the halves of a surrogate pair together and replaces a lone half', () => {
    const pair = '😀';
    expect(feed(NO_TOOLS, [`a${pair[0]}`, `${pair[1]}b`])).toEqual(['a', `${pair}b`]);
    expect(feed(NO_TOOLS, ['a\uDC00b']).join('')).toBe('a\uFFFDb');
  });

  it('releases text after a hidden block only once something visible follows', () => {
    const f = createVisibleTextFilter(TOOLS);
    expect(f.push('Hi <think>x</think>')).toBe('Hi');
    expect(f.push(' there')).toBe('  there');
    expect(f.released).toBe(stripThinking('Hi <think>x</think> there'));
  });
});
