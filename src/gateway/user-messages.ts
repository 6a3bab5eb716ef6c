/**
 * Every text a PERSON reads that the gateway writes (errors, limits, command answers). One place,
 * so wording stays consistent across Slack, Discord and the terminal. The model never sees these.
 */
import type { ModelError } from '../runtime/provider/provider.js';
import type { ApprovalOutcome, ContextReadProblem } from '../basics/ports.js';
import type { Refusal, UsageReport } from './access/gatekeeper.js';
import type { DailyUsage } from '../state/usage/usage-meter.js';

export function modelFailed(err: ModelError): string {
  switch (err.kind) {
    case 'permanent':
      // The provider's message already names the setting to fix; say it once, as one sentence.
      return `I could not get an answer from the language model: ${lowerFirst(err.message.replace(/\.\s*$/, ''))}.`;
    case 'too_large':
      return `This conversation has grown too large for the language model to take in one request (${err.message}). Start a fresh session with \`/hermes new\`; if it happens again, an operator should set HERMES_CONTEXT_TOKENS below the model's context window.`;
    case 'timeout':
      return 'The language model took too long to answer, so I stopped waiting. Please try again in a moment.';
    case 'transient':
      return `The language model is not answering right now${err.detail ? ` (${err.detail})` : ''}; please try again in a minute.`;
    case 'aborted':
      return 'Stopped.';
  }
}

function lowerFirst(s: string): string {
  return /^[A-Z][a-z]/.test(s) ? s[0]!.toLowerCase() + s.slice(1) : s;
}

export const UNEXPECTED_ERROR = 'Something went wrong on my side while working on that, and I could not finish. Please try again; if it keeps happening, an operator can look at the logs.';

export function stepLimitReached(maxSteps: number): string {
  return `I stopped after ${maxSteps} steps without finishing (the HERMES_MAX_STEPS limit). Try a narrower request, or ask me to continue.`;
}

/** A mention with nothing after it. */
export const EMPTY_MENTION = 'Yes? Tell me what you need, or use `/hermes help`.';

export function messageTooLong(chars: number, max: number): string {
  return `Your message is ${chars.toLocaleString('en-US')} characters long; I can take at most ${max.toLocaleString('en-US')}. Please shorten it or split it into parts.`;
}

export const EMPTY_ANSWER = 'The model returned an empty answer. Please try rephrasing.';

export const STORE_FAILED = 'I could not save this conversation (the storage is failing, perhaps a full disk), so I did not run it. An operator needs to check the data directory.';

export function approvalFollowUpFailed(toolName: string): string {
  return `Your decision on ${toolName} was recorded, but I could not act on it because the storage is failing, so it has not run. An operator needs to check the data directory.`;
}

export const TASK_ALREADY_ACCEPTED = 'I already have this task and am working on it.';

export const RESTART_INTERRUPTED = 'I was restarted while working on your message and could not finish it. Please send it again if you still need it.';

/** The line an approval prompt gets once decided. Lower-case outcome words, as people search for them. */
export function approvalOutcomeLine(outcome: ApprovalOutcome, who?: string): string {
  switch (outcome) {
    case 'approved':
      return `✅ approved by ${who ?? 'someone'}`;
    case 'denied':
      return `❌ denied by ${who ?? 'someone'}`;
    case 'expired':
      return '⌛ expired: nobody decided in time, so it did not run';
    case 'cancelled':
      return `🚫 cancelled${who ? ` by ${who}` : ' (a newer message arrived)'}: it did not run`;
  }
}

export const NOT_YOUR_APPROVAL = 'Only the person who asked for this action, or an admin, can approve or deny it.';
export const NOT_AN_APPROVER = 'Only the person who asked for this action, an admin, or one of this channel\'s approvers can approve or deny it. See `/hermes policy` for who they are.';
export const APPROVAL_OTHER_CONVERSATION = 'This approval request belongs to another conversation, so it cannot be decided from here.';
export const APPROVAL_UNKNOWN = 'I could not find this approval request. It may belong to an old or deleted conversation.';
export function approvalAlreadyDecided(outcome: string): string {
  return `This request was already decided (${outcome}).`;
}

const MAX_SOURCES_SHOWN = 5;
const MAX_SOURCE_CHARS = 200;

/**
 * The provenance line of an approval prompt: the outside text the turn had read before asking.
 * Plain text; each adapter only quotes the items in its own markup (`quote`).
 */
export function approvalSourcesLine(sources: readonly string[], quote: (s: string) => string = (s) => s): string {
  const shown = sources.slice(0, MAX_SOURCES_SHOWN).map((s) => quote(s.length > MAX_SOURCE_CHARS ? `${s.slice(0, MAX_SOURCE_CHARS - 1)}…` : s));
  const more = sources.length > MAX_SOURCES_SHOWN ? ` and ${sources.length - MAX_SOURCES_SHOWN} more` : '';
  return `⚠️ Before this request I read outside text: ${shown.join(', ')}${more}. Check that the request is really yours, not an instruction hidden there.`;
}

/** One short line when the conversation could not be read; the turn goes on without it. */
export function contextUnavailable(problem: ContextReadProblem, what: 'thread' | 'channel'): string {
  const place = what === 'thread' ? 'this thread' : 'this channel';
  switch (problem.kind) {
    case 'missing_permission':
      return `I can't read ${place}: the app lacks ${problem.permission} — ${problem.fix}.`;
    case 'rate_limited':
      return `The platform is rate-limiting me, so I am answering without ${place}'s earlier messages.`;
    case 'unavailable':
      return `I couldn't read ${place}'s earlier messages, so I am answering without them.`;
  }
}

// Who may use it, and how much (src/gateway/access). Each names the limit and when it lets go.

/** The private notice for someone HERMES_ALLOW does not list (at most once an hour per person). */
export const NOT_ALLOWED = 'Sorry, I only answer certain people and channels here, and this is not one of them. If you need me, ask an admin of this bot to add you.';

/** `3 s`, `12 min`, `5 h 3 min`: how long until a limit lets go. */
export function waitInWords(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.ceil(s / 60);
  if (min < 60) return `${min} min`;
  return `${Math.floor(min / 60)} h${min % 60 ? ` ${min % 60} min` : ''}`;
}

const tokens = (n: number) => n.toLocaleString('en-US');

/** Whose allowance ran out, in the words of the per-person message (which setting, so an operator knows where to look). */
function allowanceUsed(usage: DailyUsage): string {
  const amount = `${tokens(usage.limit)} tokens (${tokens(usage.used)} today`;
  switch (usage.scope ?? 'user') {
    case 'user':
      return `you have used your daily allowance of ${amount}; HERMES_USER_DAILY_TOKENS)`;
    case 'channel':
      return `this channel has used its daily allowance of ${amount}; daily_tokens in its channel policy)`;
    case 'bot':
      return `I have used my daily allowance for everyone of ${amount}; HERMES_DAILY_TOKENS)`;
  }
}

const capitalised = (s: string) => s[0]!.toUpperCase() + s.slice(1);

/** Answer to a message or task refused by a limit (one answer per refused message; nothing is queued). */
export function limitRefusal(r: Exclude<Refusal, { reason: 'not_allowed' }>, now: number): string {
  if (r.reason === 'rate_limit') {
    return `You are sending messages faster than the limit of ${r.perMinute} per minute (HERMES_USER_RATE), so I did not run this one. You can send again in ${waitInWords(r.retryAfterMs)}.`;
  }
  return `${capitalised(allowanceUsed(r.usage))}, so I did not run this. It resets at 00:00 UTC, in ${waitInWords(r.usage.resetsAt - now)}.`;
}

/** A turn stopped between steps because a daily allowance (the person's, the channel's or the bot's) ran out on the way. */
export function budgetStopped(usage: DailyUsage, stepsDone: number, now: number): string {
  const done = stepsDone > 0 ? `I stopped after ${stepsDone} step${stepsDone > 1 ? 's' : ''} without finishing` : 'I did not start this';
  return `${done}: ${allowanceUsed(usage)}. It resets at 00:00 UTC, in ${waitInWords(usage.resetsAt - now)}; ask me to continue then.`;
}

/** The private note admins get once a day when the whole bot has used 80 % of HERMES_DAILY_TOKENS. */
export function botBudgetWarning(usage: DailyUsage, now: number): string {
  const share = Math.floor((usage.used / usage.limit) * 100);
  return `Heads-up for admins: the bot has used ${share} % of its daily token budget (${tokens(usage.used)} of ${tokens(usage.limit)}; HERMES_DAILY_TOKENS). When it is used up I stop answering everyone, admins included, until 00:00 UTC (in ${waitInWords(usage.resetsAt - now)}).`;
}

/** `/hermes status` lines about the speaker's own usage and limits. */
export function usageLines(report: UsageReport, now: number): string[] {
  const { today } = report;
  const budget = today.limit > 0
    ? `${tokens(today.used)} of your ${tokens(today.limit)} daily tokens used (resets at 00:00 UTC, in ${waitInWords(today.resetsAt - now)})`
    : `${tokens(today.used)} tokens used (no daily limit)`;
  const lines = [`Today (UTC): ${budget}.`, `Message rate: ${report.ratePerMinute > 0 ? `at most ${report.ratePerMinute} per minute` : 'no limit'}.`];
  if (report.top) {
    lines.push(report.top.length ? `Top users today: ${report.top.map((t) => `${t.person} ${tokens(t.used)}`).join(', ')}` : 'Top users today: nobody has used any tokens yet.');
  }
  return lines;
}

/** Stop: a click (or `/hermes stop`) by someone who is neither the requester nor an admin. */
export function onlyRequesterMayStop(requester: string): string {
  return `Only ${requester} (who asked) or an admin can stop this task.`;
}

export const TURN_ALREADY_ENDED = 'This task has already finished.';

export const NOTHING_RUNNING = 'Nothing is running here.';

/** The last line of an answer cut short by Stop. */
export function stoppedBy(who: string): string {
  return `_Stopped by ${who}._`;
}

/** Feedback on an answer, told to the voter alone. */
export function feedbackRecorded(vote: 'up' | 'down', changed: boolean): string {
  const mark = vote === 'up' ? '👍' : '👎';
  if (changed) return `Changed your vote on this answer to ${mark}.`;
  return vote === 'up' ? `Thanks for the ${mark}.` : `Thanks for the ${mark}: this answer is marked for review.`;
}

export const FEEDBACK_FAILED = 'Sorry, your vote could not be saved right now. Please try again in a moment.';
