import type { ChatMessage, ToolCall } from '../../basics/types.js';

/**
 * Messages in the shape the OpenTelemetry GenAI conventions give `gen_ai.input.messages`,
 * `gen_ai.output.messages` and `gen_ai.system_instructions`: a role and a list of typed parts.
 * Viewers that know the conventions render these as a chat; our own message type stays ours.
 * Only used when HERMES_OTEL_CONTENT=true, and always redacted by the caller.
 */

type Part =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: string };

interface GenAiMessage {
  role: 'user' | 'assistant' | 'tool';
  parts: Part[];
}

/** What a model response needs to have for an output message (ModelResponse has it). */
export interface ResponseLike {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string;
  model: string;
}

export function toSystemInstructions(messages: readonly ChatMessage[]): Part[] {
  return messages.flatMap((m) => (m.role === 'system' ? [{ type: 'text' as const, content: m.content }] : []));
}

export function toInputMessages(messages: readonly ChatMessage[]): GenAiMessage[] {
  return messages.flatMap((m): GenAiMessage[] => {
    switch (m.role) {
      case 'system':
        return [];
      case 'user':
        return [{ role: 'user', parts: [{ type: 'text', content: m.content }] }];
      case 'assistant':
        return [{ role: 'assistant', parts: assistantParts(m.content, m.toolCalls ?? []) }];
      case 'tool':
        return [{ role: 'tool', parts: [{ type: 'tool_call_response', id: m.toolCallId, response: m.content }] }];
      default:
        return [];
    }
  });
}

export function toOutputMessages(response: ResponseLike): Array<GenAiMessage & { finish_reason: string }> {
  return [{ role: 'assistant', parts: assistantParts(response.content, response.toolCalls), finish_reason: response.finishReason }];
}

function assistantParts(content: string | null, calls: readonly ToolCall[]): Part[] {
  const parts: Part[] = content ? [{ type: 'text', content }] : [];
  for (const c of calls) parts.push({ type: 'tool_call', id: c.id, name: c.name, arguments: parsedArguments(c.arguments) });
  return parts;
}

/** The conventions want arguments as an object; text the model wrote that is not JSON stays text. */
function parsedArguments(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
