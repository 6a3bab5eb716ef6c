import type {
  ChatCompletionContentPart,
  ChatCompletionFunctionTool,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { ChatMessage, ImageRef, ToolCall } from '../../basics/types.js';
import { IMAGE_NOTES } from '../vision/image-notes.js';
import type { ToolSpec } from './provider.js';
import { newCallId, normalizeArgumentsText, type IdFactory } from './tool-text.js';
import { parseLenientJson } from './lenient-json.js';

/** Our transcript ↔ the SDK's wire shapes. Nothing outside src/runtime/provider sees SDK types. */

export function toSdkMessages(messages: ChatMessage[], imageData?: ReadonlyMap<string, string>): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  // Tool results cannot carry images in chat completions: a tool's images (view_image) follow the
  // run of tool messages as one user message, which is where servers accept image parts.
  let toolImages: { name: string; images: ImageRef[] }[] = [];
  const flushToolImages = () => {
    if (toolImages.length) out.push({ role: 'user', content: toolImages.flatMap((t) => [{ type: 'text' as const, text: IMAGE_NOTES.shownByTool(t.name, t.images) }, ...imageParts(t.images, imageData)]) });
    toolImages = [];
  };
  for (const m of messages) {
    if (m.role !== 'tool') flushToolImages();
    switch (m.role) {
      case 'system':
        out.push({ role: 'system', content: m.content });
        break;
      case 'user':
        out.push({ role: 'user', content: m.images?.length ? [{ type: 'text', text: m.content }, ...imageParts(m.images, imageData)] : m.content });
        break;
      case 'tool':
        out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
        if (m.images?.length) toolImages.push({ name: m.name, images: m.images });
        break;
      case 'assistant':
        if (!m.toolCalls?.length) {
          out.push({ role: 'assistant', content: m.content ?? '' });
          break;
        }
        out.push({
          role: 'assistant',
          content: m.content,
          tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: historyArguments(c.arguments) } })),
        });
    }
  }
  flushToolImages();
  return out;
}

/** Image parts for the refs whose bytes were loaded; one the loader could not read is named in words. */
function imageParts(images: ImageRef[], imageData: ReadonlyMap<string, string> | undefined): ChatCompletionContentPart[] {
  return images.map((ref): ChatCompletionContentPart => {
    const url = imageData?.get(ref.sha256);
    return url ? { type: 'image_url', image_url: { url } } : { type: 'text', text: IMAGE_NOTES.missing([ref]) };
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

/** A spec's wire form, made once per spec object (the registry keeps one per tool: src/capabilities/toolkit/registry.ts). */
const sdkTools = new WeakMap<ToolSpec, ChatCompletionFunctionTool>();

export function toSdkTools(tools: ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((t) => {
    let wire = sdkTools.get(t);
    if (!wire || wire.function.name !== t.name || wire.function.description !== t.description || wire.function.parameters !== t.parameters) {
      wire = { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } };
      sdkTools.set(t, wire);
    }
    return wire;
  });
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
