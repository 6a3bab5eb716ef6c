import type { Reminder } from './reminder-record.js';

/**
 * The text a reminder is posted with: "⏰ <@U1> Reminder: water the plants", plus "(late: was due
 * 14:05 UTC)" when it fires late and "(may be a repeat)" when an earlier attempt may already have
 * been posted. Times are UTC because the reader's zone is unknown here; the date is added when
 * the reminder is late by a day or more so "14:05" is not misread as today.
 */
export function formatReminder(
  r: Pick<Reminder, 'text' | 'dueAt' | 'maybeRepeat'>,
  mention: string,
  late: boolean,
  now: number = Date.now(),
): string {
  const notes: string[] = [];
  if (late) notes.push(`(late: was due ${describeDue(r.dueAt, now)})`);
  if (r.maybeRepeat) notes.push('(may be a repeat)');
  const head = `⏰ ${mention} Reminder: ${r.text}`;
  return notes.length === 0 ? head : `${head} ${notes.join(' ')}`;
}

function describeDue(dueAt: number, now: number): string {
  const iso = new Date(dueAt).toISOString();
  const time = `${iso.slice(11, 16)} UTC`;
  return now - dueAt >= 24 * 60 * 60 * 1000 || iso.slice(0, 10) !== new Date(now).toISOString().slice(0, 10)
    ? `${iso.slice(0, 10)} ${time}`
    : time;
}
