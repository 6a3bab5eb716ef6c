import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolExecutor, type PreparedCall } from '../../src/capabilities/toolkit/executor.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { parseLenientJson } from '../../src/runtime/provider/lenient-json.js';
import { toSdkMessages } from '../../src/runtime/provider/sdk-messages.js';

/** Near-JSON that small open models write is read; text that was cut off or is ambiguous is not. */

const time = defineTool({
  name: 'get_current_time',
  description: 'time',
  input: z.object({ timezone: z.string().optional(), verbose: z.boolean().optional() }),
  run: async () => 'now',
});

function prepare(args: string): PreparedCall {
  const registry = new ToolRegistry({});
  registry.register(time);
  return new ToolExecutor({ registry, defaultTimeoutMs: 1000 }).prepareCall({ id: 'call_1', name: 'get_current_time', arguments: args }, { isAdmin: false });
}

describe('lenient tool arguments', () => {
  it.each([
    ['a trailing comma', '{"timezone": "Asia/Shanghai",}', { timezone: 'Asia/Shanghai' }],
    ['single quotes', "{'timezone': 'Asia/Shanghai'}", { timezone: 'Asia/Shanghai' }],
    ['unquoted keys', '{timezone: "Asia/Shanghai", verbose: true}', { timezone: 'Asia/Shanghai', verbose: true }],
    ['comments', '{"timezone": "Asia/Shanghai" /* the user is in Beijing */, // done\n}', { timezone: 'Asia/Shanghai' }],
    ['Python constants', '{"timezone": "UTC", "verbose": True}', { timezone: 'UTC', verbose: true }],
  ])('runs a call with %s', (_what, text, expected) => {
    const p = prepare(text);
    if (p.kind !== 'ready') throw new Error(`expected ready, got ${JSON.stringify(p)}`);
    expect(p.args).toEqual(expected);
  });

  it.each([
    ['cut off after a comma', '{"timezone": "Asia/Shanghai", '],
    ['an unterminated string', '{"timezone": "Asia/Shang}'],
    ['a stray quote (which key was meant?)', '{"timezone": "Asia, "verbose": true}'],
    ['two objects', '{"timezone": "UTC"} {"timezone": "Asia/Tokyo"}'],
    ['prose', 'the timezone is Asia/Shanghai'],
  ])('still answers %s as not valid JSON, with the text in view', (_what, text) => {
    const p = prepare(text);
    if (p.kind !== 'rejected') throw new Error(`expected a rejection, got ${JSON.stringify(p)}`);
    expect(p.outcome.errorKind).toBe('bad_json');
    expect(p.outcome.content).toMatch(/not valid JSON/);
    expect(p.outcome.content).toContain(text.slice(0, 20));
  });

  it('says whether it repaired', () => {
    expect(parseLenientJson('{"a": 1}')).toEqual({ ok: true, value: { a: 1 }, repaired: false });
    expect(parseLenientJson('{"a": 1,}')).toEqual({ ok: true, value: { a: 1 }, repaired: true });
    expect(parseLenientJson('[1, 2,]').ok).toBe(false);
  });

  it('sends a repaired call back in the history as the JSON that ran, and broken text wrapped', () => {
    const [msg] = toSdkMessages([
      { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 'get_current_time', arguments: '{"timezone": "UTC",}' }, { id: 'b', name: 'get_current_time', arguments: '{"timezone": ' }] },
    ]);
    const calls = (msg as { tool_calls: Array<{ function: { arguments: string } }> }).tool_calls;
    expect(calls[0]!.function.arguments).toBe('{"timezone":"UTC"}');
    expect(JSON.parse(calls[1]!.function.arguments)).toEqual({ invalid_json_arguments: '{"timezone": ' });
  });
});
