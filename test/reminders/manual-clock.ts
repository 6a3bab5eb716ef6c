import type { Clock } from '../../src/basics/clock.js';

/** A Clock the test moves by hand: timers fire in time order as `advance` passes them. */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Array<{ at: number; seq: number; fn: () => void }> = [];

  constructor(start: number) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by ms, firing every timer passed on the way (bounded). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let i = 0; i < 100_000; i++) {
      const next = [...this.timers].sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next || next.at > target) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = target;
  }

  pendingTimers(): number {
    return this.timers.length;
  }
}

const realPause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Advances the manual clock in steps, letting real async work (SQLite I/O) run between steps,
 * until `done` holds. Bounded: throws after maxSteps so a broken scheduler fails the test.
 * `settled`, where the work has a promise for "nothing left to do" (a WorkQueue's idle()), ends
 * each step's wait as soon as it resolves; `pauseMs` (real time) bounds the wait either way, for
 * work a test holds on purpose.
 */
export async function advanceUntil(
  clock: ManualClock,
  done: () => boolean | Promise<boolean>,
  opts: { stepMs: number; maxSteps?: number; pauseMs?: number; settled?: () => Promise<unknown> },
): Promise<void> {
  const maxSteps = opts.maxSteps ?? 200;
  for (let i = 0; i < maxSteps; i++) {
    if (await done()) return;
    clock.advance(opts.stepMs);
    const pauseMs = opts.pauseMs ?? 5;
    if (!opts.settled) {
      await realPause(pauseMs);
      continue;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([opts.settled(), new Promise((resolve) => (timer = setTimeout(resolve, pauseMs)))]);
    clearTimeout(timer);
  }
  if (await done()) return;
  throw new Error(`condition not reached after ${maxSteps} steps of ${opts.stepMs} ms`);
}

/** Waits (real time) for async work to settle without moving the manual clock. */
export async function settle(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await realPause(5);
  }
  throw new Error('condition not reached in time');
}
