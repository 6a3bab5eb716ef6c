import { randomInt } from 'node:crypto';
import type { DbOrTx } from '../store/database.js';
import type { WorkContext, WorkItem, WorkQueue } from '../cluster/work-queue.js';

/**
 * Reminders and scheduled runs as work of the one WorkQueue (src/state/cluster/work-queue.ts):
 * the moment something fires is a `hermes_work` row whose `due_at` is the fire time, written in
 * the same transaction as the reminder or schedule row it belongs to. The queue's claim (an
 * indexed query on `due_at`; FOR UPDATE SKIP LOCKED on PostgreSQL) is the only timer, so a due
 * item runs once across instances and no row is rewritten by every instance.
 *
 * Each timer has a lane of its own (`reminder:<id>`, `schedule:<id>`): a reminder never waits
 * behind a conversation's turns, and the runs of one schedule go one after another.
 */
export type TimerJob =
  | { kind: 'reminder'; reminderId: string }
  /** One due time of a schedule; the run that claims it writes the row of the next one. */
  | { kind: 'scheduled'; scheduleId: string; dueAt: number };

/** The part of the WorkQueue the stores write through (rows added inside their own transactions). */
export type TimerQueue = Pick<WorkQueue<TimerJob>, 'addIn' | 'wake'>;

/** Runs one timer job; 'interrupted' keeps its row for the next claim (see WorkRunner). */
export type TimerRunner = (job: TimerJob, ctx: WorkContext) => Promise<void | 'interrupted'>;

export const reminderLane = (id: string) => `reminder:${id}`;
export const scheduleLane = (id: string) => `schedule:${id}`;

/** Fixed-width sortable order within a timer's lane (the form of gateway/order-key.ts): by fire time. */
export function timerOrder(atMs: number, tieBreak: string): string {
  return `${(BigInt(Math.max(0, Math.floor(atMs))) * 1000n).toString().padStart(17, '0')}:${tieBreak}`;
}

export function reminderWork(id: string, dueAt: number): WorkItem<TimerJob> {
  return { id: `reminder:${id}`, kind: 'reminder', lane: reminderLane(id), order: timerOrder(dueAt, id), dueAt, job: { kind: 'reminder', reminderId: id } };
}

export function scheduleWork(id: string, dueAt: number): WorkItem<TimerJob> {
  return { id: `schedule:${id}@${dueAt}`, kind: 'scheduled', lane: scheduleLane(id), order: timerOrder(dueAt, id), dueAt, job: { kind: 'scheduled', scheduleId: id, dueAt } };
}

/** True for a job of this file's kinds (the gateway's queue carries other kinds too). */
export function isTimerJob(job: { kind: string }): job is TimerJob {
  return job.kind === 'reminder' || job.kind === 'scheduled';
}

/** Removes a timer's waiting row (not one a runner holds: that runner finds the record moved on). */
export async function dropWaiting(tx: DbOrTx, workId: string): Promise<void> {
  await tx.deleteFrom('hermes_work').where('id', '=', workId).where('claimed_by', 'is', null).execute();
}

/** Dispatches a timer job to its runner. */
export function timerRunner(runners: { reminder: TimerRunner; scheduled: TimerRunner }): TimerRunner {
  return (job, ctx) => (job.kind === 'reminder' ? runners.reminder(job, ctx) : runners.scheduled(job, ctx));
}

const ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A short random id people can type: `prefix` then `length` letters and digits, no look-alikes. */
export function shortId(prefix: string, length: number): string {
  let id = prefix;
  for (let i = 0; i < length; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** Waits `ms` on the clock; false when `signal` aborted first. */
export function sleepFor(clock: { setTimer(fn: () => void, ms: number): () => void }, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      cancel();
      resolve(false);
    };
    const cancel = clock.setTimer(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
