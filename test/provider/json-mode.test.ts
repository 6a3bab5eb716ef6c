import { describe, expect, it } from 'vitest';
import { jsonModeInstructions, toJsonModeMessages } from '../../src/runtime/provider/json-mode.js';
import type { ChatMessage } from '../../src/basics/types.js';

const tool = { name: 'get_current_time', description: 'Current time.', parameters: { type: 'object', properties: { timezone: { type: 'string' } } } };

describe('JSON mode transcript', () => {
  it('lists each tool with its schema and the answer format', () => {
    const text = jsonModeInstructions([tool]);
    expect(text).toContain('- get_current_time: Current time.');
    expect(text).toContain('{"type":"object","properties":{"timezone":{"type":"string"}}}');
    expect(text).toContain('"final_answer"');
    expect(jsonModeInstructions([])).toContain('No tools are available');
  });

  it('adds a system message when there is none, and merges consecutive observations', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'time in two places?' },
      { role: 'assistant', content: 'Checking both.', toolCalls: [{ id: 'c1', name: 'get_current_time', arguments: '{"timezone":"UTC"}' }, { id: 'c2', name: 'get_current_time', arguments: 'not json' }] },
      { role: 'tool', toolCallId: 'c1', name: 'get_current_time', content: '12:00' },
      { role: 'tool', toolCallId: 'c2', name: 'get_current_time', content: 'Error: arguments are not valid JSON' },
      { role: 'user', content: 'thanks' },
    ];
    const out = toJsonModeMessages(messages, [tool]);
    expect(out[0]?.role).toBe('system');
    expect(out.slice(1)).toEqual([
      { role: 'user', content: 'time in two places?' },
      { role: 'assistant', content: '{"thought":"Checking both.","action":"get_current_time","action_input":{"timezone":"UTC"}}\n{"action":"get_current_time","action_input":"not json"}' },
      { role: 'user', content: 'Observation for get_current_time (call c1): 12:00\n\nObservation for get_current_time (call c2): Error: arguments are not valid JSON' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it('appends the instructions to the first system message only', () => {
    const out = toJsonModeMessages([{ role: 'system', content: 'A' }, { role: 'system', content: 'B' }], [tool]);
    expect(out).toHaveLength(2);
    expect(out[0]?.content).toMatch(/^A\n\nTOOLS\./);
    expect(out[1]).toEqual({ role: 'system', content: 'B' });
  });
});
