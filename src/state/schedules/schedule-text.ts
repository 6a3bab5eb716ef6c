/**
 * What people read about scheduled tasks in the chat (run headers, notices, the private list).
 * Model-facing texts are the tool results in tools/schedules.ts and runPrompt below.
 */
import type { ScheduleView } from './user-schedules.js';
import type { ScheduleRecord, SkippedRuns } from './schedule-record.js';
import { formatRunTime } from './schedule-spec.js';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "⏰ Morning digest" plus what a reader should know about this run (late, runs skipped). */
export function runHeader(name: string, info: { late: boolean; dueText: string; skipped: SkippedRuns }): string {
  const notes: string[] = [];
  if (info.late) notes.push(`late: this run was due ${info.dueText}, while I was not running`);
  if (info.skipped.down > 0) notes.push(`${plural(info.skipped.down, 'earlier run')} skipped: I was not running at the time`);
  if (info.skipped.busy > 0) notes.push(`${plural(info.skipped.busy, 'earlier run')} skipped: the run before was still going`);
  return notes.length === 0 ? `⏰ ${name}` : `⏰ ${name} (${notes.join('; ')})`;
}

/** The run's answer, or what went wrong, under its header. */
export function withHeader(header: string, text: string, failed: boolean): string {
  return failed ? `${header}: this run failed.\n${text}` : `${header}\n${text}`;
}

/** The user message of a run: the model is asked to do the task now, as its creator. */
export function runPrompt(r: Pick<ScheduleRecord, 'id' | 'name' | 'task' | 'schedule'>, dueText: string): string {
  return (
    `[scheduled task "${r.name}" (id ${r.id}, schedule "${r.schedule}"), due ${dueText}] ` +
    `Do this task now and reply with the result; your reply is posted where the task was scheduled.\n\n${r.task}`
  );
}

export function runFailed(name: string): string {
  return `⏰ ${name}: this run failed to start because of an error on my side. The schedule stays active; an operator can look at the logs.`;
}

export function runInterrupted(name: string, dueText: string): string {
  return `⏰ ${name}: the run due ${dueText} was interrupted (I stopped while it ran) and did not finish. It is not repeated; the next run is on schedule.`;
}

export function onceMissed(name: string, dueText: string, why: 'busy' | 'too_late'): string {
  return why === 'busy'
    ? `⏰ ${name}: the run due ${dueText} was skipped because an earlier run was still going.`
    : `⏰ ${name}: the run due ${dueText} was missed: I was not running then, and it is now too late to run it (HERMES_SCHEDULE_GRACE_S).`;
}

export function creatorNotAllowed(name: string): string {
  return `⏰ ${name}: stopped. The person who scheduled it may no longer use me, so their scheduled tasks are stopped.`;
}

/** One schedule as a line of the list (private list, list tool). */
export function scheduleLine(v: ScheduleView): string {
  const next = v.nextRuns[0];
  const when = next === undefined ? 'no further runs' : `next ${formatRunTime(next, v.timezone, v.seconds)}`;
  const running = v.running ? ' (running now)' : '';
  return `\`${v.id}\` *${v.name}* — ${v.words}; ${when}${running}\n    task: ${v.task.length > 200 ? `${v.task.slice(0, 200)}…` : v.task}`;
}

export function scheduleList(views: ScheduleView[], prefix: string): string {
  if (views.length === 0) return 'You have no scheduled tasks. Ask me in a message, e.g. "every weekday at 9, post a summary of X here".';
  return [`Your scheduled tasks (${views.length}):`, ...views.map((v) => `• ${scheduleLine(v)}`), `Cancel one with \`${prefix}unschedule <id>\`.`].join('\n');
}

export function unscheduleAnswer(id: string, ok: boolean, prefix: string): string {
  if (id === '') return `Say which one: \`${prefix}unschedule <id>\` (ids are in \`${prefix}schedules\`).`;
  return ok ? `Cancelled scheduled task \`${id}\`; it will not run again.` : `You have no active scheduled task \`${id}\`. See \`${prefix}schedules\`.`;
}
