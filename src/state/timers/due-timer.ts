import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';

/**
 * The one durable timer of the bot. Reminders and scheduled tasks are both "due items" in the
 * store; each kind is a DueSource that knows how to find and claim its own items, and this timer
 * decides when to look:
 *
 * - one clock timer for the earliest due item across all sources, plus a safety-net poll (a
 *   missed poke, an item written by another process, a clock jump);
 * - an item is claimed by its source (a compare-and-set in the store) before its job runs, so
 *   two timers on one store (a restart overlap, several instances) never both run it;
 * - every loop is bounded: at most `maxInFlight` jobs at once, at most MAX_ROUNDS claim rounds
 *   per tick; the rest waits for the next tick, which a finished job triggers.
 */
export interface DueJob {
  /** Unique while in flight, across sources, e.g. "reminder:k7m2qp". */
  key: string;
  run(ctx: DueJobContext): Promise<void>;
}

export interface DueJobContext {
  /** Waits on the timer's clock; false when the timer stopped meanwhile (give up, keep the claim). */
  sleep(ms: number): Promise<boolean>;
}

export interface DueSource {
  /** For logs: "reminder", "schedule". */
  readonly kind: string;
  /** The earliest time one of its items is due, or undefined when nothing waits. */
  nextDueAt(): Promise<number | undefined>;
  /**
   * Claims up to `limit` items due at `now` and returns one job per claim. Items whose key is
   * `busy` (already running here) are left alone. `more`: there may be more due than claimed.
   */
  claim(now: number, limit: number, busy: (key: string) => boolean): Promise<{ jobs: DueJob[]; more: boolean }>;
}

export interface DueTimerOptions {
  clock: Clock;
  log: Logger;
  sources: DueSource[];
  /** Safety-net poll; default 30 s. */
  pollMs?: number;
  /** Jobs in progress at once, all sources together; default 20. */
  maxInFlight?: number;
}

export interface DueTimer {
  start(): Promise<void>;
  /** No new claims from now on; jobs in flight go on (see idle). */
  stop(): void;
  /** Resolves when no job is in flight, or after `maxWaitMs` (real time: used while shutting down). */
  idle(maxWaitMs: number): Promise<void>;
  /** Call after an item is created or changed, so an earlier due time re-arms the timer. */
  poke(): void;
}

const MAX_ROUNDS = 10;
const MAX_TIMER_MS = 60 * 60 * 1000;
/** When a tick made no progress but something looks due, wait this long rather than spin. */
const IDLE_RETRY_MS = 1_000;

export function createDueTimer(opts: DueTimerOptions): DueTimer {
  const { clock, log, sources } = opts;
  const pollMs = opts.pollMs ?? 30_000;
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 20);

  let running = false;
  let ticking = false;
  let tickAgain = false;
  let cancelTimer: (() => void) | undefined;
  let cancelPoll: (() => void) | undefined;
  const inFlight = new Set<string>();
  const idleWaiters: Array<() => void> = [];
  const sleepers = new Set<(awake: boolean) => void>();

  function sleep(ms: number): Promise<boolean> {
    if (!running) return Promise.resolve(false);
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

  function launch(source: DueSource, job: DueJob): void {
    inFlight.add(job.key);
    // Promise.resolve().then: a job that throws synchronously is caught like any other.
    Promise.resolve()
      .then(() => job.run({ sleep }))
      .catch((error: unknown) => log.error({ kind: source.kind, key: job.key, err: error instanceof Error ? error.message : String(error) }, 'due job failed'))
      .finally(() => {
        inFlight.delete(job.key);
        if (inFlight.size === 0) {
          for (const wake of idleWaiters.splice(0)) wake();
        }
        poke();
      });
  }

  /** One claim round over every source; how many jobs it started and whether more may be waiting. */
  async function claimRound(): Promise<{ started: number; more: boolean }> {
    let started = 0;
    let more = false;
    for (const source of sources) {
      const room = maxInFlight - inFlight.size;
      if (room <= 0) return { started, more: true };
      const claimed = await source.claim(clock.now(), room, (key) => inFlight.has(key));
      for (const job of claimed.jobs) {
        if (inFlight.has(job.key)) continue;
        launch(source, job);
        started++;
      }
      more ||= claimed.more;
    }
    return { started, more };
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
      log.error({ err: error instanceof Error ? error.message : String(error) }, 'due timer tick failed');
    } finally {
      ticking = false;
    }
    // A poke that arrived while this tick was arming must not wait for the poll.
    if (tickAgain && running) {
      tickAgain = false;
      void tick();
    }
  }

  async function nextDueAt(): Promise<number | undefined> {
    const all = await Promise.all(sources.map((s) => s.nextDueAt()));
    const known = all.filter((t): t is number => t !== undefined);
    return known.length === 0 ? undefined : Math.min(...known);
  }

  async function arm(madeProgress: boolean): Promise<void> {
    if (!running) return;
    // A full house re-ticks when a job finishes; arming now would spin on past-due items.
    if (inFlight.size >= maxInFlight) return;
    const next = await nextDueAt();
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
    idle(maxWaitMs) {
      if (inFlight.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, maxWaitMs);
        timer.unref?.();
        idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    poke,
  };
}
