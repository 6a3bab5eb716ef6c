import type { ChatMessage } from '../../basics/types.js';
import type { ToolSpec } from './provider.js';

/**
 * JSON mode (HERMES_TOOL_MODE=json) is for models and servers without function calling. The model
 * gets no `tools` field; instead the system prompt describes the tools and one answer format, and
 * the transcript is rewritten so tool calls and results read as plain conversation: assistant
 * turns as the JSON the model would have written, results as "Observation" user turns. The
 * transcript our loop keeps stays in the native shape, so switching modes never corrupts a session.
 */

/** The instructions appended to the system prompt; listed tools are the ones offered this call. */
export function jsonModeInstructions(tools: ToolSpec[]): string {
  const answerFormat = [
    'ANSWER FORMAT. Reply with exactly one JSON object and nothing else.',
    'To call a tool:',
    '{"thought": "<why you need it>", "action": "<tool name>", "action_input": {<arguments matching the tool\'s parameters>}}',
    'To answer the user:',
    '{"thought": "<short reasoning>", "final_answer": "<your answer to the user>"}',
    'After a tool call, the result arrives in a message starting with "Observation for <tool>". Use it, then call another tool or give the final answer.',
  ];
  if (tools.length === 0) {
    return [...answerFormat, 'No tools are available right now: always give a final_answer.'].join('\n');
  }
  const list = tools.map((t) => `- ${t.name}: ${t.description.trim()}\n  parameters (JSON Schema): ${JSON.stringify(t.parameters)}`);
  return ['TOOLS. You can call these tools:', ...list, '', ...answerFormat].join('\n');
}

/**
 * Rewrites a transcript for JSON mode. The instructions join the first system message (or become
 * one); consecutive tool results are merged into one user turn because many chat templates reject
 * two user turns in a row less gracefully than one longer turn.
 */
export function toJsonModeMessages(messages: ChatMessage[], tools: ToolSpec[]): ChatMessage[] {
  const instructions = jsonModeInstructions(tools);
  const out: ChatMessage[] = [];
  let instructed = false;
  let observations: string[] = [];
  const flush = (): void => {
    if (observations.length) out.push({ role: 'user', content: observations.join('\n\n') });
    observations = [];
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      observations.push(`Observation for ${m.name} (call ${m.toolCallId}): ${m.content}`);
      continue;
    }
    flush();
    if (m.role === 'system' && !instructed) {
      out.push({ role: 'system', content: `${m.content}\n\n${instructions}` });
      instructed = true;
    } else if (m.role === 'assistant' && m.toolCalls?.length) {
      out.push({ role: 'assistant', content: assistantAsJson(m.content, m.toolCalls) });
    } else {
      out.push(m);
    }
  }
  flush();
  if (!instructed) out.unshift({ role: 'system', content: instructions });
  return out;
}

function assistantAsJson(content: string | null, calls: NonNullable<Extract<ChatMessage, { role: 'assistant' }>['toolCalls']>): string {
  return calls
    .map((c, i) => {
      const thought = i === 0 && content?.trim() ? { thought: content.trim() } : {};
      return JSON.stringify({ ...thought, action: c.name, action_input: parseOrRaw(c.arguments) });
    })
    .join('\n');
}

function parseOrRaw(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
