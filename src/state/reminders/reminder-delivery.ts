import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { WorkContext } from '../cluster/work-queue.js';
import { sleepFor } from '../timers/timer-work.js';
import type { Reminder } from './reminder-record.js';
import type { ReminderStore } from './reminder-store.js';

/**
 * Delivers a reminder when the WorkQueue hands over its row (`reminder:<id>`, due at the
 * reminder's time; see src/state/timers/timer-work.ts): each one delivered exactly once as far as
 * a crash allows.
 *
 * - The queue's claim gives the row to one runner on one instance; the runner still moves the
 *   record scheduled → firing (a compare-and-set that a cancel at the same moment loses or wins)
 *   before delivering, and marks it fired after.
 * - A failed delivery is retried after `retryDelaysMs` (one retry per entry), then marked failed.
 * - A record found `firing` belonged to a runner that died mid-delivery (kill -9, an instance
 *   whose lease ran out) or was stopped while waiting to retry: it is delivered again marked "may
 *   be a repeat", since whether the first post went out cannot be known, and a missed reminder is
 *   worse than a flagged duplicate.
 */
export interface DeliveryInfo {
  /** Fired more than lateAfterMs after its time (the bot was down, or busy). */
  late: boolean;
  /** An earlier attempt may have been posted (crash mid-delivery, or an attempt timed out). */
  maybeRepeat: boolean;
  attempt: number;
}

export interface ReminderDeliveryOptions {
  reminders: ReminderStore;
  clock: Clock;
  /** Posts the reminder; throws when it was not posted. */
  deliver: (r: Reminder, info: DeliveryInfo) => Promise<void>;
  log: Logger;
  /** Later than this after dueAt counts as late; default 60 s. */
  lateAfterMs?: number;
  /** Waits between attempts; attempts = 1 + length. Default 2 s, 10 s, 30 s. */
  retryDelaysMs?: number[];
  /** One delivery attempt; default 30 s. */
  deliverTimeoutMs?: number;
}

type Attempt = { ok: true } | { ok: false; error: string; timedOut: boolean };

/** Runs the reminder job of one work row; 'interrupted' when stopped before it was done (the row stays). */
export type ReminderRunner = (job: { reminderId: string }, ctx: Pick<WorkContext, 'signal' | 'startedBefore'>) => Promise<void | 'interrupted'>;

export function createReminderRunner(opts: ReminderDeliveryOptions): ReminderRunner {
  const { reminders, clock, deliver, log } = opts;
  const lateAfterMs = opts.lateAfterMs ?? 60_000;
  const retryDelays = opts.retryDelaysMs ?? [2_000, 10_000, 30_000];
  const deliverTimeoutMs = opts.deliverTimeoutMs ?? 30_000;

  async function attemptOnce(r: Reminder, info: DeliveryInfo): Promise<Attempt> {
    let cancel = () => {};
    const timeout = new Promise<Attempt>((resolve) => {
      cancel = clock.setTimer(() => resolve({ ok: false, error: `delivery timed out after ${deliverTimeoutMs} ms`, timedOut: true }), deliverTimeoutMs);
    });
    // Promise.resolve().then: a deliver that throws synchronously is a failed attempt like any other.
    const attempt = Promise.resolve().then(() => deliver(r, info)).then(
      (): Attempt => ({ ok: true }),
      (error: unknown): Attempt => ({ ok: false, error: error instanceof Error ? error.message : String(error), timedOut: false }),
    );
    try {
      return await Promise.race([attempt, timeout]);
    } finally {
      cancel();
    }
  }

  async function deliverWithRetries(r: Reminder, late: boolean, signal: AbortSignal): Promise<void | 'interrupted'> {
    let maybeRepeat = r.maybeRepeat === true;
    const attempts = retryDelays.length + 1;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const record = maybeRepeat ? { ...r, maybeRepeat: true } : r;
      const outcome = await attemptOnce(record, { late, maybeRepeat, attempt });
      const fields = { reminderId: r.id, owner: r.ownerKey, attempt, late, maybeRepeat };
      if (outcome.ok) {
        await reminders.markFired(r.id, late);
        log.info(fields, 'reminder delivered');
        return;
      }
      if (outcome.timedOut) maybeRepeat = true;
      if (attempt === attempts) {
        await reminders.markFailed(r.id, outcome.error);
        log.error({ ...fields, err: outcome.error }, 'reminder delivery failed; giving up');
        return;
      }
      await reminders.recordAttempt(r.id, outcome.error);
      const waitMs = retryDelays[attempt - 1] ?? 0;
      log.warn({ ...fields, err: outcome.error, retryInMs: waitMs }, 'reminder delivery failed; will retry');
      // Stopped while waiting: the row stays, and the next claim delivers it marked maybe-repeat.
      if (!(await sleepFor(clock, waitMs, signal))) return 'interrupted';
    }
  }

  return async (job, ctx) => {
    const current = await reminders.get(job.reminderId);
    if (!current) return;
    let r: Reminder | undefined;
    if (current.status === 'scheduled') {
      // Undefined: cancelled a moment ago.
      r = await reminders.claim(current.id);
    } else if (current.status === 'firing') {
      r = await reminders.takeOver(current.id);
      if (r) log.warn({ reminderId: r.id, claimedAt: current.claimedAt, startedBefore: ctx.startedBefore }, 'reminder was claimed but never finished (crash mid-delivery?); redelivering marked as a possible repeat');
    }
    if (!r) return;
    return deliverWithRetries(r, clock.now() - r.dueAt > lateAfterMs, ctx.signal);
  };
}
