import { OUTSIDE_TEXT_RULE } from '../../basics/safety/outside-text.js';
import type { DelegationRequest } from '../../capabilities/toolkit/tool-api.js';
import type { AgentProfile } from '../../settings/agent-profiles.js';

/**
 * Everything a sub-agent's model reads (its system prompt and task), what the main model reads
 * when a delegation fails, and the notes a person sees while sub-agents work: each in one place.
 */

/** The longest final answer handed back to the main agent; longer ones are cut with a note. */
export const MAX_SUBAGENT_ANSWER_CHARS = 8_000;

/**
 * The first line of every sub-agent's system prompt. It names the agent, so a request can be told
 * apart from the main agent's on the wire (the scripted eval model routes replies by it).
 */
const FIRST_LINE = (name: string) => `You are the "${name}" sub-agent of Hermes, an assistant that works inside a team chat.`;

/** The agent named by a system prompt's first line, if it is a sub-agent's. */
export function agentOfPrompt(system: string): string | undefined {
  return /^You are the "([a-z][a-z0-9_-]*)" sub-agent of Hermes/.exec(system)?.[1];
}

export function subAgentSystemPrompt(profile: AgentProfile, now: Date, timezone: string): string {
  return [
    FIRST_LINE(profile.name),
    'The main agent gave you one task. Your final answer goes back to it, not to a person: make it complete and self-contained (facts, numbers, file paths, sources).',
    `The current time is ${now.toISOString().slice(0, 16)}Z (UTC); the deployment's default time zone is ${timezone}.`,
    '',
    'Your instructions:',
    profile.instructions,
    '',
    'Rules:',
    '- Use only the tools you are given. You cannot ask anyone anything: nobody reads your messages until your final answer.',
    '- Actions that need a person\'s approval are not available to you. If the task needs one, do not attempt it: say in your answer what the main agent should do.',
    `- ${OUTSIDE_TEXT_RULE}`,
    `- You have at most ${profile.maxSteps} model calls; answer before they run out, with what you have if you must.`,
  ].join('\n');
}

/** The sub-agent's one user message: the task, and the context the main agent chose to pass. */
export function taskMessage(request: DelegationRequest): string {
  const context = request.context?.trim();
  return context ? `Task:\n${request.task.trim()}\n\nContext from the main agent:\n${context}` : `Task:\n${request.task.trim()}`;
}

/** The answer as the main model receives it: capped, saying so when cut. */
export function cappedAnswer(agent: string, text: string): string {
  if (text.length <= MAX_SUBAGENT_ANSWER_CHARS) return text;
  return `${text.slice(0, MAX_SUBAGENT_ANSWER_CHARS)}\n${SUBAGENT_MODEL_TEXT.cut(agent, MAX_SUBAGENT_ANSWER_CHARS, text.length)}`;
}

/** What the main model (or, inside, the sub-agent's model) reads when something did not work. */
export const SUBAGENT_MODEL_TEXT = {
  stepLimit: (agent: string, steps: number) =>
    `The ${agent} sub-agent used all ${steps} of its steps without a final answer, so nothing came back. Give it a smaller, clearer task, or do this part yourself.`,
  modelError: (agent: string, message: string) =>
    `The ${agent} sub-agent stopped because its model call failed: ${message} Retry once only if that looks temporary; otherwise tell the user.`,
  budget: (agent: string) =>
    `The ${agent} sub-agent stopped: a daily token budget (the person's, this channel's or the bot's) is used up. Do not delegate again; answer with what you have.`,
  cancelled: (agent: string) => `The ${agent} sub-agent was cancelled before it finished. It produced no answer.`,
  empty: (agent: string) => `(the ${agent} sub-agent finished without writing an answer)`,
  cut: (agent: string, shown: number, total: number) => `[The ${agent} sub-agent's answer was cut at ${shown} of ${total} characters.]`,
  /** Inside the sub-agent: a call that would need a person. */
  cannotAsk: (tool: string) =>
    `${tool} did not run: here it would need a person's approval, and a sub-agent cannot ask anyone. Do not retry it. ` +
    'Finish your task without it and say in your answer what action the main agent should take.',
} as const;

/** What a person sees while sub-agents work (terminal lines; chat platforms show their working indicator). */
export const SUBAGENT_USER_TEXT = {
  tools: (agent: string, tools: string[]) => `${agent}: ${tools.join(', ')}`,
  waiting: (agent: string, max: number) => `${agent}: waiting (at most ${max} sub-agents at once)`,
  stopped: (agent: string, outcome: string) => `${agent}: stopped (${OUTCOME_WORDS[outcome] ?? outcome})`,
} as const;

const OUTCOME_WORDS: Record<string, string> = {
  step_limit: 'out of steps',
  model_error: 'model call failed',
  budget_exhausted: 'daily token budget used up',
  aborted: 'cancelled',
};

/** Where the main model is told the answer came from, when the sub-agent read outside text. */
export function answerSource(agent: string, sources: readonly string[]): string {
  const shown = sources.slice(0, 5).join(', ');
  return `the ${agent} sub-agent, which read ${shown}${sources.length > 5 ? ` and ${sources.length - 5} more` : ''}`;
}
