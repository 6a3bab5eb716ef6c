import type { ChatMessage } from '../../basics/types.js';
import type { ModelProvider } from '../provider/provider.js';

/**
 * The running summary: turns that no longer fit the context window are folded into it by one model
 * call. What a later turn most often needs from an old one is a name, a number, a decision or an
 * unfinished task, and in a shared channel who asked for what; the prompt asks for exactly those.
 */

export const SUMMARY_MAX_TOKENS = 400;

/**
 * Shown under the summary heading: what the summary dropped is not gone (every accepted message and
 * answer stays in the search index), and the model should look it up rather than guess.
 */
export const SUMMARY_SEARCH_NOTE =
  '(Older messages of this conversation were condensed into this summary. Their full text is still searchable: call search_conversations when a detail is missing here.)';
/** Bounds on what one summary call sends, so a turn with huge tool results cannot blow it up. */
const TOOL_RESULT_CHARS = 1_500;
const MESSAGE_CHARS = 4_000;
const TRANSCRIPT_CHARS = 40_000;
const MIN_MESSAGE_CHARS = 200;

const SUMMARY_INSTRUCTIONS = [
  'You maintain the running summary of a chat between users and an AI assistant.',
  'Merge the earlier summary (if any) and the new transcript into one updated summary.',
  'Keep: facts, names, numbers, dates, links, decisions, results of tool calls that still matter,',
  'open tasks and promises, and who (which user) asked for each request.',
  'Drop: greetings, chit-chat, and raw tool output that no longer matters.',
  'Never include passwords, API keys or tokens. Write compact bullet points in the language of the',
  'conversation, at most about 250 words. Output only the summary.',
].join('\n');

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} […${text.length - max} more chars]`;
}

function speakerLabel(m: Extract<ChatMessage, { role: 'user' }>): string {
  if (!m.speaker) return 'User';
  const name = m.speaker.displayName ? `${m.speaker.displayName} ` : '';
  return `User ${name}(${m.speaker.platform}:${m.speaker.userId})`;
}

function renderMessage(m: ChatMessage, cap: number): string {
  switch (m.role) {
    case 'system':
      return `System: ${clip(m.content, cap)}`;
    case 'user':
      return `${speakerLabel(m)}: ${clip(m.content, cap)}`;
    case 'assistant': {
      const calls = (m.toolCalls ?? []).map((c) => `${c.name}(${clip(c.arguments, Math.min(cap, 500))})`);
      const text = m.content ? clip(m.content, cap) : '';
      return `Assistant: ${[text, calls.length ? `[called ${calls.join(', ')}]` : ''].filter(Boolean).join(' ')}`;
    }
    case 'tool':
      return `Tool result ${m.name}: ${clip(m.content, Math.min(cap, TOOL_RESULT_CHARS))}`;
  }
}

/** The transcript the summariser sees, shrinking every message evenly until the whole fits. */
export function renderTranscript(messages: readonly ChatMessage[]): string {
  let cap = MESSAGE_CHARS;
  for (;;) {
    const text = messages.map((m) => renderMessage(m, cap)).join('\n');
    if (text.length <= TRANSCRIPT_CHARS) return text;
    if (cap <= MIN_MESSAGE_CHARS) return clip(text, TRANSCRIPT_CHARS);
    cap = Math.max(MIN_MESSAGE_CHARS, Math.floor(cap / 2));
  }
}

/**
 * One model call without tools. Throws when the call fails or returns nothing, so the caller keeps
 * the raw turns instead of replacing them with an empty summary.
 */
export async function summarizeTurns(
  provider: ModelProvider,
  previousSummary: string | undefined,
  messages: ChatMessage[],
  signal?: AbortSignal,
): Promise<string> {
  const previous = previousSummary?.trim() ? previousSummary.trim() : '(none yet)';
  const request: ChatMessage[] = [
    { role: 'system', content: SUMMARY_INSTRUCTIONS },
    {
      role: 'user',
      content: `Earlier summary:\n${previous}\n\nNew transcript:\n${renderTranscript(messages)}\n\nWrite the updated summary.`,
    },
  ];
  const res = await provider.complete({ messages: request, tools: [], signal, maxTokens: SUMMARY_MAX_TOKENS });
  const text = res.content?.trim();
  if (!text) throw new Error('the summary model call returned no text');
  return text;
}
