import type { ChatCompletionRequestBody, FakeReply } from '../test/fakes/openai/fake-openai.js';

/**
 * The scripted 5-step turn every agent runs for the overhead bench: four `lookup` tool calls, one
 * per model step, then an answer. The fake decides from the request alone (tool results since the
 * last user message), so any number of agents can share one fake server at once.
 */
export const TOOL_CALLS_PER_TURN = 4;
export const STEPS_PER_TURN = TOOL_CALLS_PER_TURN + 1;
export const FINAL_ANSWER = 'All four items looked up.';
export const TURN_PROMPT = 'Look up item-1 to item-4 with the lookup tool, one at a time, then say you are done.';
export const LOOKUP_DESCRIPTION = 'Looks up one item by key and returns its value.';

export function lookupValue(key: string): string {
  return `value of ${key}`;
}

type WireMessage = { role: string; content?: unknown };

export function scriptedStep(req: ChatCompletionRequestBody): FakeReply {
  const messages = req.messages as WireMessage[];
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  const done = messages.slice(lastUser + 1).filter((m) => m.role === 'tool').length;
  if (done < TOOL_CALLS_PER_TURN) return { toolCalls: [{ name: 'lookup', arguments: { key: `item-${done + 1}` } }] };
  return { text: FINAL_ANSWER };
}
