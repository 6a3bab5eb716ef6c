import { describe, expect, it } from 'vitest';
import {
  encodeArguments,
  normalizeArgumentsText,
  parseBareJsonToolCalls,
  parseHermesToolCalls,
  parseJsonModeAnswer,
  stripThinking,
  topLevelObjects,
} from '../../src/runtime/provider/tool-text.js';

function ids(): () => string {
  let n = 0;
  return () => `call_t${++n}`;
}

describe('normalizeArgumentsText', () => {
  it('keeps a plain JSON object as written', () => {
    expect(normalizeArgumentsText('{"a": "3"}')).toBe('{"a": "3"}');
  });
  it('unwraps arguments encoded twice (and three times)', () => {
    const once = JSON.stringify({ expression: '2*3' });
    expect(normalizeArgumentsText(JSON.stringify(once))).toBe(once);
    expect(normalizeArgumentsText(JSON.stringify(JSON.stringify(once)))).toBe(once);
  });
  it('leaves text that is not JSON unchanged for the executor to reject', () => {
    expect(normalizeArgumentsText('{"a": 1,')).toBe('{"a": 1,');
    expect(normalizeArgumentsText('"just a string"')).toBe('"just a string"');
  });
  it('treats empty arguments as an empty object', () => {
    expect(normalizeArgumentsText('  ')).toBe('{}');
    expect(encodeArguments(undefined)).toBe('{}');
    expect(encodeArguments({ n: '3', b: 'true' })).toBe('{"n":"3","b":"true"}');
  });
});

describe('parseHermesToolCalls', () => {
  it('reads several blocks, keeps prose, strips the markup', () => {
    const text = 'Let me check.\n<tool_call>\n{"name": "get_current_time", "arguments": {"timezone": "Asia/Shanghai"}}\n</tool_call>\n<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>';
    const r = parseHermesToolCalls(text, ids());
    expect(r.toolCalls).toEqual([
      { id: 'call_t1', name: 'get_current_time', arguments: '{"timezone":"Asia/Shanghai"}' },
      { id: 'call_t2', name: 'calculator', arguments: '{"expression":"1+1"}' },
    ]);
    expect(r.content).toBe('Let me check.');
    expect(r.parseErrors).toEqual([]);
  });

  it('unwraps double-encoded arguments and accepts "parameters"', () => {
    const args = JSON.stringify(JSON.stringify({ url: 'https://example.com' }));
    const r = parseHermesToolCalls(`<tool_call>{"name": "fetch_url", "arguments": ${args}}</tool_call><tool_call>{"name": "recall_facts", "parameters": {"query": "tea"}}</tool_call>`, ids());
    expect(r.toolCalls.map((c) => c.arguments)).toEqual(['{"url":"https://example.com"}', '{"query":"tea"}']);
    expect(r.content).toBeNull();
  });

  it('reads an unclosed last block and a fenced block', () => {
    const r = parseHermesToolCalls('<tool_call>\n```json\n{"name": "a", "arguments": {}}\n```\n</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": 1}}', ids());
    expect(r.toolCalls.map((c) => [c.name, c.arguments])).toEqual([['a', '{}'], ['b', '{"x":1}']]);
  });

  it('reports malformed blocks without throwing and keeps good ones', () => {
    const r = parseHermesToolCalls('<tool_call>{"name": "calculator", "arguments": {"expression": "1+</tool_call><tool_call>{"arguments": {}}</tool_call><tool_call>{"name": "ok_tool"}</tool_call>', ids());
    expect(r.toolCalls).toEqual([{ id: 'call_t1', name: 'ok_tool', arguments: '{}' }]);
    expect(r.parseErrors).toHaveLength(2);
    expect(r.parseErrors[0]).toMatch(/block 1 is not valid JSON/);
    expect(r.parseErrors[1]).toMatch(/block 2 has no "name"/);
    expect(r.content).toContain('"expression": "1+');
  });
});

describe('parseJsonModeAnswer', () => {
  it('reads an action inside a code fence with prose around it', () => {
    const text = 'Sure! I will compute it.\n```json\n{"thought": "need math", "action": "calculator", "action_input": {"expression": "6*7"}}\n```\nWaiting for the result.';
    const r = parseJsonModeAnswer(text, ids());
    expect(r.toolCalls).toEqual([{ id: 'call_t1', name: 'calculator', arguments: '{"expression":"6*7"}' }]);
    expect(r.content).toBeNull();
    expect(r.parseErrors).toEqual([]);
  });

  it('leaves numbers and booleans written as strings alone', () => {
    const r = parseJsonModeAnswer('{"action": "fetch_url", "action_input": {"url": "https://a.example", "max_chars": "500"}}', ids());
    expect(JSON.parse(r.toolCalls[0]?.arguments ?? '')).toEqual({ url: 'https://a.example', max_chars: '500' });
  });

  it('unwraps a double-encoded action_input', () => {
    const r = parseJsonModeAnswer(JSON.stringify({ action: 'calculator', action_input: JSON.stringify({ expression: '1' }) }), ids());
    expect(r.toolCalls[0]?.arguments).toBe('{"expression":"1"}');
  });

  it('returns final_answer as the content, also in the "Final Answer" action style', () => {
    expect(parseJsonModeAnswer('{"thought": "done", "final_answer": "It is 42."}').content).toBe('It is 42.');
    expect(parseJsonModeAnswer('```\n{"action": "Final Answer", "action_input": "Hello"}\n```').content).toBe('Hello');
  });

  it('takes plain prose (even with braces) as the final answer', () => {
    const prose = 'The set {1, 2} has two elements.';
    expect(parseJsonModeAnswer(prose)).toEqual({ content: prose, toolCalls: [], parseErrors: [] });
  });

  it('reports malformed JSON that tried to be an action, keeping the text in view', () => {
    const text = '```json\n{"thought": "x", "action": "calculator", "action_input": {"expression": "1+1",}}\n```';
    const r = parseJsonModeAnswer(text, ids());
    expect(r.toolCalls).toEqual([]);
    expect(r.parseErrors).toHaveLength(1);
    expect(r.parseErrors[0]).toMatch(/not valid/);
    expect(r.content).toContain('"action": "calculator"');
  });

  it('reports an unterminated action object', () => {
    const r = parseJsonModeAnswer('{"action": "calculator", "action_input": {"expression": "1+1"');
    expect(r.parseErrors).toHaveLength(1);
  });

  it('refuses an answer that is both an action and a final answer', () => {
    const r = parseJsonModeAnswer('{"action": "calculator", "action_input": {}, "final_answer": "3"}');
    expect(r.toolCalls).toEqual([]);
    expect(r.parseErrors[0]).toMatch(/both "action" and "final_answer"/);
  });

  it('accepts several action objects in order and Hermes tags in JSON mode', () => {
    const r = parseJsonModeAnswer('{"action": "a", "action_input": {}}\n{"action": "b", "action_input": {"k": 1}}', ids());
    expect(r.toolCalls.map((c) => c.name)).toEqual(['a', 'b']);
    const h = parseJsonModeAnswer('<tool_call>{"name": "c", "arguments": {}}</tool_call>', ids());
    expect(h.toolCalls.map((c) => c.name)).toEqual(['c']);
  });

  it('ignores <think> reasoning', () => {
    const r = parseJsonModeAnswer('<think>maybe {"action": "x"</think>{"final_answer": "hi"}');
    expect(r).toEqual({ content: 'hi', toolCalls: [], parseErrors: [] });
    expect(stripThinking('</think>answer')).toBe('answer');
  });
});

describe('topLevelObjects', () => {
  it('ignores braces inside strings and nested objects', () => {
    expect(topLevelObjects('a {"s": "}{", "n": {"x": 1}} b {}')).toEqual(['{"s": "}{", "n": {"x": 1}}', '{}']);
  });
});

describe('parseBareJsonToolCalls', () => {
  const tools = new Set(['calculator', 'get_current_time']);
  it('reads a whole-answer {"name", "parameters"} object naming an offered tool', () => {
    const r = parseBareJsonToolCalls('```json\n{"name": "calculator", "parameters": {"expression": "2^8"}}\n```', tools, ids());
    expect(r).toEqual({ content: null, toolCalls: [{ id: 'call_t1', name: 'calculator', arguments: '{"expression":"2^8"}' }], parseErrors: [] });
  });
  it('leaves JSON alone when a name is not an offered tool or there is prose around it', () => {
    expect(parseBareJsonToolCalls('{"name": "Ada", "arguments": {}}', tools)).toBeNull();
    expect(parseBareJsonToolCalls('Here: {"name": "calculator", "arguments": {}}', tools)).toBeNull();
    expect(parseBareJsonToolCalls('[{"name": "calculator"}, {"name": "Bob"}]', tools)).toBeNull();
  });
  it('reads a list and surrounding whitespace, and leaves prose and other JSON values alone', () => {
    expect(parseBareJsonToolCalls('  [{"name": "calculator", "arguments": {"expression": "1"}}]\n', tools, ids())?.toolCalls).toEqual([{ id: 'call_t1', name: 'calculator', arguments: '{"expression":"1"}' }]);
    for (const text of ['All four items looked up.', '42', '"{\\"name\\": \\"calculator\\"}"', 'null', '```\nplain\n```']) expect(parseBareJsonToolCalls(text, tools), text).toBeNull();
  });
  it('counts in JSON mode when the name is an offered tool', () => {
    const r = parseJsonModeAnswer('Calling: {"name": "get_current_time", "arguments": {"timezone": "UTC"}}', ids(), tools);
    expect(r.toolCalls).toEqual([{ id: 'call_t1', name: 'get_current_time', arguments: '{"timezone":"UTC"}' }]);
  });
});
