import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { DueJob, DueJobContext, DueSource } from '../timers/due-timer.js';
import type { Reminder } from './reminder-record.js';
import type { ReminderStore } from './reminder-store.js';

/**
 * Reminders as a source of the due timer (src/state/timers/due-timer.ts): each one delivered exactly
 * once as far as a crash allows.
 *
 * - A reminder is claimed (compare-and-set scheduled → firing) before delivery and marked fired
 *   after, so two timers on one store never both deliver it.
 * - A failed delivery is retried after `retryDelaysMs` (one retry per entry), then marked failed.
 * - A claim whose process died mid-delivery (still `firing` after `leaseMs` with no renewal) is
 *   taken over and delivered again marked "may be a repeat": whether the first post went out
 *   cannot be known, and a missed reminder is worse than a flagged duplicate. Live claims renew
 *   at every attempt, so a peer never takes over a delivery still in progress.
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
  /** A claim not renewed for this long is orphaned; default 2 × (timeout + longest retry delay). */
  leaseMs?: number;
}

type Attempt = { ok: true } | { ok: false; error: string; timedOut: boolean };

const keyOf = (id: string) => `reminder:${id}`;

export function createReminderSource(opts: ReminderDeliveryOptions): DueSource {
  const { reminders, clock, deliver, log } = opts;
  const lateAfterMs = opts.lateAfterMs ?? 60_000;
  const retryDelays = opts.retryDelaysMs ?? [2_000, 10_000, 30_000];
  const deliverTimeoutMs = opts.deliverTimeoutMs ?? 30_000;
  const leaseMs = opts.leaseMs ?? 2 * (deliverTimeoutMs + Math.max(0, ...retryDelays));

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

  async function deliverWithRetries(r: Reminder, late: boolean, ctx: DueJobContext): Promise<void> {
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
      // Stopped while waiting: the claim stays and is taken over (marked maybe-repeat) after the lease.
      if (!(await ctx.sleep(waitMs))) return;
    }
  }

  const job = (r: Reminder, late: boolean): DueJob => ({ key: keyOf(r.id), run: (ctx) => deliverWithRetries(r, late, ctx) });

  return {
    kind: 'reminder',
    nextDueAt: () => reminders.nextDueAt(),

    async claim(now, limit, busy) {
      const jobs: DueJob[] = [];
      for (const r of await reminders.orphans(now, leaseMs, limit)) {
        if (busy(keyOf(r.id))) continue;
        const taken = await reminders.takeOver(r.id, r.claimedAt);
        if (!taken) continue;
        log.warn({ reminderId: r.id, claimedAt: r.claimedAt }, 'reminder was claimed but never finished (crash mid-delivery?); redelivering marked as a possible repeat');
        jobs.push(job(taken, clock.now() - taken.dueAt > lateAfterMs));
      }
      const room = limit - jobs.length;
      if (room <= 0) return { jobs, more: true };
      const due = await reminders.due(now, room);
      for (const r of due) {
        if (busy(keyOf(r.id)) || !(await reminders.claim(r.id))) continue;
        jobs.push(job({ ...r, status: 'firing' }, clock.now() - r.dueAt > lateAfterMs));
      }
      return { jobs, more: due.length >= room };
    },
  };
}
