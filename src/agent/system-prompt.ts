import type { Conversation, Speaker } from '../basics/types.js';
import type { FactView } from '../state/memory/user-facts.js';
import { defang, OUTSIDE_TEXT_RULE } from '../basics/safety/outside-text.js';
import type { SkillSummary } from '../capabilities/skills/skill-library.js';
import { SKILL_TEXT } from '../capabilities/skills/skill-text.js';

export interface PromptInput {
  now: Date;
  timezone: string;
  conversation: Conversation;
  speaker: Speaker;
  /** The speaking user's facts only; nobody else's ever reach this function. */
  facts: FactView[];
  /** Usable skills, by name and description only (their instructions load with use_skill). */
  skills?: readonly SkillSummary[];
  /** The channel policy's instructions (default's first), from the operator's config file. */
  channelInstructions?: readonly string[];
}

/**
 * The system prompt for one model call. Facts go in without a tool call so the model uses them
 * on every turn of that user; the memory policy tells the model what is worth remembering.
 */
export function buildSystemPrompt(input: PromptInput): string {
  const { conversation: c, speaker } = input;
  const where = c.isDm
    ? 'a direct message with one person'
    : 'a shared channel: several people may speak; each user message starts with [from NAME (id ID)], which the platform verified';
  const lines = [
    'You are Hermes, a helpful assistant that works inside a team chat. You answer questions and get things done with the tools you are given.',
    `Platform: ${c.platform}. This conversation is ${where}.`,
    // To the minute: a prompt that changes every millisecond defeats providers' prompt caching.
    `The current time is ${input.now.toISOString().slice(0, 16)}Z (UTC); the deployment's default time zone is ${input.timezone}.`,
    '',
    'How you work:',
    '- Use tools for anything about the real world right now (time, web pages, searches) instead of guessing; never invent real-time data.',
    '- If no tool can do what is asked, say so plainly instead of pretending.',
    '- Some actions need a human to approve them. When a tool result says an action did not run, do not retry it and do not claim it happened.',
    `- ${OUTSIDE_TEXT_RULE}`,
    '- Keep answers short and use Markdown sparingly (bold, lists, code blocks).',
    '',
    'Memory: you can keep long-term facts about the person speaking with remember_fact, search them with recall_facts and delete them with forget_fact.',
    'Remember durable preferences, standing instructions and facts about their work when they state them; do not remember chit-chat, one-off requests, or secrets (passwords, tokens, keys).',
  ];
  if (input.skills && input.skills.length > 0) {
    lines.push('', SKILL_TEXT.promptIntro);
    // A description is one line of someone else's words: kept short, on one line, unable to forge a block marker.
    for (const s of input.skills) lines.push(`- ${s.name}: ${defang(s.description.replace(/\s+/g, ' ')).slice(0, 300)}`);
  }
  if (input.channelInstructions && input.channelInstructions.length > 0) {
    // The operator's words for this place (hermes.config.yaml `channels:`), not a person's.
    lines.push('', 'Instructions for this channel, from the operator:', ...input.channelInstructions);
  }
  const name = speaker.displayName ? `${speaker.displayName} (id ${speaker.userId})` : `id ${speaker.userId}`;
  lines.push('', `The person speaking now is ${name}.`);
  if (input.facts.length > 0) {
    lines.push('What you remember about them (their own facts, most relevant first):');
    for (const f of input.facts) lines.push(`- [${f.id}] ${f.text}`);
  } else {
    lines.push('You have no remembered facts about them yet.');
  }
  return lines.join('\n');
}

/** The text of a user message as stored: shared conversations carry the verified speaker. */
export function tagUserText(conversation: Conversation, speaker: Speaker, text: string): string {
  if (conversation.isDm) return text;
  const name = (speaker.displayName ?? speaker.userId).replace(/[\[\]\n]/g, '');
  return `[from ${name} (id ${speaker.userId})] ${text}`;
}
