import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Reminder } from './reminder-record.js';
import type { ReminderStore } from './reminder-store.js';

/**
 * Fires reminders at their time, each exactly once as far as a crash allows.
 *
 * - One timer for the earliest due reminder, plus a safety-net poll (a missed poke, a reminder
 *   written by another process, a clock jump).
 * - A reminder is claimed (compare-and-set scheduled → firing) before delivery and marked fired
 *   after, so two schedulers on one store never both deliver it.
 * - A failed delivery is retried after `retryDelaysMs` (one retry per entry), then marked failed.
 * - A claim whose scheduler died mid-delivery (still `firing` after `leaseMs` with no renewal) is
 *   taken over and delivered again marked "may be a repeat": whether the first post went out
 *   cannot be known, and a missed reminder is worse than a flagged duplicate. Live claims renew
 *   at every attempt, so a peer scheduler never takes over a delivery still in progress.
 * - Every loop is bounded: at most `maxInFlight` deliveries at once, at most MAX_ROUNDS claim
 *   rounds per tick; the rest waits for the next tick, which a finished delivery triggers.
 */
export interface DeliveryInfo {
  /** Fired more than lateAfterMs after its time (the bot was down, or busy). */
  late: boolean;
  /** An earlier attempt may have been posted (crash mid-delivery, or an attempt timed out). */
  maybeRepeat: boolean;
  attempt: number;
}

export interface ReminderSchedulerOptions {
  reminders: ReminderStore;
  clock: Clock;
  /** Posts the reminder; throws when it was not posted. */
  deliver: (r: Reminder, info: DeliveryInfo) => Promise<void>;
  log: Logger;
  /** Safety-net poll; default 30 s. */
  pollMs?: number;
  /** Later than this after dueAt counts as late; default 60 s. */
  lateAfterMs?: number;
  /** Waits between attempts; attempts = 1 + length. Default 2 s, 10 s, 30 s. */
  retryDelaysMs?: number[];
  /** One delivery attempt; default 30 s. */
  deliverTimeoutMs?: number;
  /** A claim not renewed for this long is orphaned; default 2 × (timeout + longest retry delay). */
  leaseMs?: number;
  /** Deliveries in progress at once; default 20. */
  maxInFlight?: number;
}

export interface ReminderScheduler {
  start(): Promise<void>;
  stop(): void;
  /** Call after a new reminder is created, so an earlier one re-arms the timer. */
  poke(): void;
}

const MAX_ROUNDS = 10;
const MAX_TIMER_MS = 60 * 60 * 1000;
/** When a tick made no progress but something looks due, wait this long rather than spin. */
const IDLE_RETRY_MS = 1_000;

type Attempt = { ok: true } | { ok: false; error: string; timedOut: boolean };

export function createReminderScheduler(opts: ReminderSchedulerOptions): ReminderScheduler {
  const { reminders, clock, deliver, log } = opts;
  const pollMs = opts.pollMs ?? 30_000;
  const lateAfterMs = opts.lateAfterMs ?? 60_000;
  const retryDelays = opts.retryDelaysMs ?? [2_000, 10_000, 30_000];
  const deliverTimeoutMs = opts.deliverTimeoutMs ?? 30_000;
  const leaseMs = opts.leaseMs ?? 2 * (deliverTimeoutMs + Math.max(0, ...retryDelays));
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 20);

  let running = false;
  let ticking = false;
  let tickAgain = false;
  let cancelTimer: (() => void) | undefined;
  let cancelPoll: (() => void) | undefined;
  const inFlight = new Set<string>();
  const sleepers = new Set<(awake: boolean) => void>();

  function sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = (awake: boolean) => {
        sleepers.delete(wake);
        cancel();
        resolve(awake);
      };
      const cancel = clock.setTimer(() => wake(true), ms);
      sleepers.add(wake);
    });
  }

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

  async function deliverWithRetries(r: Reminder, late: boolean): Promise<void> {
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
      if (!(await sleep(waitMs))) return;
    }
  }

  function launch(r: Reminder, late: boolean): void {
    inFlight.add(r.id);
    deliverWithRetries(r, late)
      .catch((error: unknown) => log.error({ reminderId: r.id, err: error }, 'reminder bookkeeping failed'))
      .finally(() => {
        inFlight.delete(r.id);
        poke();
      });
  }

  /** One claim round; returns how many deliveries it started and whether more may be waiting. */
  async function claimRound(): Promise<{ started: number; more: boolean }> {
    const now = clock.now();
    let room = maxInFlight - inFlight.size;
    let started = 0;
    if (room <= 0) return { started, more: false };

    for (const r of await reminders.orphans(now, leaseMs, room)) {
      if (inFlight.has(r.id)) continue;
      const taken = await reminders.takeOver(r.id, r.claimedAt);
      if (!taken) continue;
      log.warn({ reminderId: r.id, claimedAt: r.claimedAt }, 'reminder was claimed but never finished (crash mid-delivery?); redelivering marked as a possible repeat');
      launch(taken, clock.now() - taken.dueAt > lateAfterMs);
      room--;
      started++;
    }
    if (room <= 0) return { started, more: true };

    const due = await reminders.due(now, room);
    for (const r of due) {
      if (inFlight.has(r.id) || !(await reminders.claim(r.id))) continue;
      launch({ ...r, status: 'firing' }, clock.now() - r.dueAt > lateAfterMs);
      started++;
    }
    return { started, more: due.length >= room };
  }

  async function tick(): Promise<void> {
    if (!running) return;
    if (ticking) {
      tickAgain = true;
      return;
    }
    ticking = true;
    let progress = 0;
    try {
      for (let round = 0; round < MAX_ROUNDS && running; round++) {
        tickAgain = false;
        const { started, more } = await claimRound();
        progress += started;
        if (!more && !tickAgain) break;
      }
      await arm(progress > 0);
    } catch (error) {
      // A store error: leave the next try to the poll rather than spinning on a failing store.
      log.error({ err: error }, 'reminder scheduler tick failed');
    } finally {
      ticking = false;
    }
    // A poke that arrived while this tick was arming must not wait for the poll.
    if (tickAgain && running) {
      tickAgain = false;
      void tick();
    }
  }

  async function arm(madeProgress: boolean): Promise<void> {
    if (!running) return;
    // A full house re-ticks when a delivery finishes; arming now would spin on past-due entries.
    if (inFlight.size >= maxInFlight) return;
    const next = await reminders.nextDueAt();
    cancelTimer?.();
    cancelTimer = undefined;
    if (next === undefined || !running) return;
    let delay = Math.min(MAX_TIMER_MS, Math.max(0, next - clock.now()));
    if (delay === 0 && !madeProgress) delay = Math.min(IDLE_RETRY_MS, pollMs);
    cancelTimer = clock.setTimer(() => void tick(), delay);
  }

  function schedulePoll(): void {
    cancelPoll?.();
    cancelPoll = clock.setTimer(() => {
      if (!running) return;
      schedulePoll();
      void tick();
    }, pollMs);
  }

  function poke(): void {
    void tick();
  }

  return {
    async start() {
      if (running) return;
      running = true;
      schedulePoll();
      await tick();
    },
    stop() {
      running = false;
      cancelTimer?.();
      cancelPoll?.();
      cancelTimer = cancelPoll = undefined;
      for (const wake of [...sleepers]) wake(false);
    },
    poke,
  };
}
