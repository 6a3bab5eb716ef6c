import type { ChatCompletion, ChatCompletionChunk, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';

/**
 * Reads a streamed chat completion (`stream: true`) into the completion the server would have
 * answered without streaming, passing each piece of content on as it arrives.
 *
 * Tool calls come as deltas keyed by `index`: the first carries id and name, later ones more of
 * the arguments text. Some compatible servers send a whole call in one delta, omit the index (the
 * id then says which call it is), or repeat the name in every delta; all of those assemble to
 * the same calls. Usage arrives in a last chunk without choices when asked for
 * (`stream_options.include_usage`); a server that omits it gets an estimate, so daily budgets
 * still count something close to the truth.
 */
export interface StreamedAnswer {
  completion: ChatCompletion;
  /** False when the server sent no usage chunk and the numbers are estimates. */
  usageReported: boolean;
  /**
   * False when the stream ended without a finish reason: the SDK ends its iteration quietly when
   * the request is aborted, and a dropped connection can look the same, so the caller must not
   * take what arrived for a whole answer.
   */
  finished: boolean;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/** Bounds work on a runaway server: more calls than this in one answer are dropped. */
const MAX_STREAMED_CALLS = 64;

export async function readCompletionStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  onContent: (delta: string) => void,
  estimate: { promptChars: number; model: string },
): Promise<StreamedAnswer> {
  let content = '';
  let sawContent = false;
  let finishReason: ChatCompletion.Choice['finish_reason'] | null = null;
  let usage: CompletionUsage | undefined;
  let model = '';
  let id = '';
  const calls: PartialCall[] = [];

  for await (const chunk of chunks) {
    id ||= chunk.id ?? '';
    model ||= chunk.model ?? '';
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      sawContent = true;
      content += delta.content;
      onContent(delta.content);
    }
    for (const d of delta.tool_calls ?? []) addCallDelta(calls, d);
  }

  const toolCalls: ChatCompletionMessageFunctionToolCall[] = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  const outChars = content.length + calls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  const reported = usage !== undefined;
  const finalUsage: CompletionUsage = usage ?? estimateUsage(estimate.promptChars, outChars);
  const completion: ChatCompletion = {
    id,
    object: 'chat.completion',
    created: 0,
    model: model || estimate.model,
    choices: [
      {
        index: 0,
        finish_reason: finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
        logprobs: null,
        message: { role: 'assistant', content: sawContent ? content : null, refusal: null, ...(toolCalls.length > 0 && { tool_calls: toolCalls }) },
      },
    ],
    usage: finalUsage,
  };
  return { completion, usageReported: reported, finished: finishReason !== null };
}

function addCallDelta(calls: PartialCall[], d: ChatCompletionChunk.Choice.Delta.ToolCall): void {
  const byIndex = typeof d.index === 'number' ? d.index : d.id ? calls.findIndex((c) => c.id === d.id) : calls.length - 1;
  const at = byIndex >= 0 ? byIndex : calls.length;
  if (at >= MAX_STREAMED_CALLS) return;
  while (calls.length <= at) calls.push({ id: '', name: '', arguments: '' });
  const call = calls[at]!;
  if (d.id) call.id = d.id;
  const name = d.function?.name;
  // A repeated full name is the same name again, not more of it.
  if (name && name !== call.name) call.name = call.name && !name.startsWith(call.name) ? call.name + name : name;
  if (d.function?.arguments) call.arguments += d.function.arguments;
}

/** About four characters a token: close enough for budgets when a server reports nothing. */
function estimateUsage(promptChars: number, outChars: number): CompletionUsage {
  const prompt = Math.max(1, Math.ceil(promptChars / 4));
  const completion = Math.max(1, Math.ceil(outChars / 4));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
