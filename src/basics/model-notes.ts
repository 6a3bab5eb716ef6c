/**
 * Every text the MODEL reads that the loop itself writes (tool results of actions that did not
 * run, parse problems, limits). User-facing texts live in gateway/user-messages.ts: the two
 * audiences need different words for the same event.
 */
import type { ContextReadProblem } from './ports.js';
import type { ApprovalOutcome } from './approval-outcome.js';
import type { ChatMessage } from '../basics/types.js';

const WHY: Record<Exclude<ApprovalOutcome, 'approved'>, string> = {
  denied: 'the user denied it',
  expired: 'nobody approved it before the approval expired',
  cancelled: 'the request was cancelled (a newer message arrived or the user said stop)',
};

/** Tool result for an approval-gated call that did not run. Must say "did not run" and "do not retry". */
export function actionNotRun(toolName: string, outcome: Exclude<ApprovalOutcome, 'approved'>, by?: string): string {
  const who = outcome === 'denied' && by ? `${by} denied it` : WHY[outcome];
  return `The action ${toolName} did not run: ${who}. Do not retry it and do not claim it happened; tell the user it was not done.`;
}

export function actionOutcomeUnknown(toolName: string): string {
  return `The action ${toolName} was approved and started, but the bot restarted before it finished: its outcome is unknown. Do not retry it automatically; tell the user the outcome is unknown and that they can check and ask again.`;
}

export function interruptedCall(toolName: string): string {
  return `The call to ${toolName} was interrupted by a restart and did not complete; its outcome is unknown. Do not retry actions with side effects without asking the user.`;
}

export function argsTooLargeToShow(toolName: string, chars: number, max: number): string {
  return `${toolName} did not run and was not sent for approval: its arguments are ${chars} characters long when shown, and a person can be asked to approve at most ${max}. What runs must be exactly what the approver sees, so make the arguments shorter (for example a smaller body) or tell the user it cannot be done in one call.`;
}

export const ONE_APPROVAL_AT_A_TIME =
  'This action did not run: only one action that needs approval can wait at a time. If it is still needed after the first one is decided, request it again then.';

export function unparseableToolCalls(errors: string[]): string {
  return `Your last answer tried to call a tool but could not be understood:\n${errors.map((e) => `- ${e}`).join('\n')}\nCall the tool again with a valid call, or answer the user in plain text.`;
}

/** Told to the model (as a system note before the request) when the thread could not be read. */
export function threadContextMissing(problem: ContextReadProblem): string {
  const why =
    problem.kind === 'missing_permission' ? `the app lacks the ${problem.permission} permission`
    : problem.kind === 'rate_limited' ? 'the platform rate-limited the read'
    : 'the read failed';
  return `The earlier messages of this thread could not be read (${why}); the user has been told. If the request depends on them, say you cannot see them instead of guessing.`;
}

/** read_channel_history's answer when the platform refused or failed the read. */
export function channelHistoryMissing(problem: ContextReadProblem): string {
  if (problem.kind === 'missing_permission') return `Cannot read this channel's history: the app lacks the ${problem.permission} permission (${problem.fix}). Tell the user; do not retry.`;
  if (problem.kind === 'rate_limited') return 'The platform is rate-limiting history reads right now. Tell the user and try again later, not in this turn.';
  return `Reading this channel's history failed (${problem.detail}).`;
}

/** Stands in for a private tool call's arguments on another person's turn (must stay valid JSON). */
export function privateCallArgsStub(): string {
  return '{"hidden":"private to another user"}';
}

/** Stands in for a private tool call's result on another person's turn. */
export function privateResultStub(toolName: string): string {
  return `[${toolName} result hidden: it belongs to another user and is only shown on their turns]`;
}

/** Left in history when a turn stops because the speaker's daily tokens ran out between steps. */
/** Whose daily allowance stopped a task: the person's, the channel's or the whole bot's. */
export function budgetStopped(scope: 'user' | 'channel' | 'bot' = 'user'): string {
  const whose = scope === 'user' ? "the user's daily token allowance" : scope === 'channel' ? "this channel's daily token allowance" : "the bot's daily token allowance for everyone";
  return `The previous task stopped before it was finished: ${whose} ran out. The tool results above are complete, but no answer was given. If the user asks to continue, pick up from there.`;
}

/** A note from the loop itself, in the conversation where the model reads it (models follow user-role notes best). */
export function systemNote(text: string): ChatMessage {
  return { role: 'user', content: `[system note] ${text}` };
}

/** After an answer that stated figures no tool gave and nobody wrote (agent/grounding.ts). */
export function groundingNote(claims: readonly string[]): string {
  return `Your answer states ${claims.map((c) => `"${c}"`).join(', ')}, which no tool gave you in this conversation. If it is live or specific data (prices, times, dates, figures, links), check it with a tool now; otherwise answer again and say plainly which of it is from memory and may be out of date.`;
}
