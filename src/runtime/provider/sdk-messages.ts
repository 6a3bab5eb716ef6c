import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { ChatMessage, ToolCall } from '../../basics/types.js';
import type { ToolSpec } from './provider.js';
import { newCallId, normalizeArgumentsText, type IdFactory } from './tool-text.js';
import { parseLenientJson } from './lenient-json.js';

/** Our transcript ↔ the SDK's wire shapes. Nothing outside src/runtime/provider sees SDK types. */

export function toSdkMessages(messages: ChatMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m): ChatCompletionMessageParam => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content };
      case 'user':
        return { role: 'user', content: m.content };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
      case 'assistant':
        if (!m.toolCalls?.length) return { role: 'assistant', content: m.content ?? '' };
        return {
          role: 'assistant',
          content: m.content,
          tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: historyArguments(c.arguments) } })),
        };
    }
  });
}

/**
 * Arguments as we send them back in the history. A call the model wrote with broken JSON stays in
 * the transcript (its tool message explains the error), but servers such as Ollama parse history
 * arguments and answer 400 to broken JSON, which would wedge the session; so broken text travels
 * wrapped in a valid object.
 */
function historyArguments(text: string): string {
  const parsed = parseLenientJson(text);
  if (!parsed.ok) return JSON.stringify({ invalid_json_arguments: text });
  // Repaired near-JSON ran as what it was read as; the history shows exactly that.
  return parsed.repaired ? JSON.stringify(parsed.value) : text;
}

export function toSdkTools(tools: ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/**
 * Native tool calls → ours. Arguments keep the model's text (malformed JSON included: the executor
 * rejects it with a message the model can act on); double encoding is undone. Missing or repeated
 * ids, which some compatible servers produce, are replaced so every result pairs with one call.
 */
export function fromSdkToolCalls(message: ChatCompletionMessage, newId: IdFactory = newCallId): { toolCalls: ToolCall[]; parseErrors: string[] } {
  const toolCalls: ToolCall[] = [];
  const parseErrors: string[] = [];
  const seen = new Set<string>();
  for (const call of message.tool_calls ?? []) {
    if (call.type !== 'function') {
      parseErrors.push(`Tool call of type "${call.type}" is not supported; call tools as functions.`);
      continue;
    }
    const id = call.id && !seen.has(call.id) ? call.id : newId();
    seen.add(id);
    toolCalls.push({ id, name: call.function.name, arguments: normalizeArgumentsText(call.function.arguments ?? '') });
  }
  return { toolCalls, parseErrors };
}
