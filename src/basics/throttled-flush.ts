import type { Clock } from './clock.js';

/**
 * Runs `flush` after a change, at most once per `intervalMs` and never two at once: changes that
 * arrive while a flush runs are gathered into the next one. An answer shown while it is written
 * is edited this way on every platform (Slack's stream or edited message, Discord's edited reply),
 * since each platform limits how often a message may change.
 *
 * `close()` cancels the pending flush and waits for a running one; after it nothing runs again.
 * A rejected flush goes to `onError` and does not stop later ones.
 */
export interface ThrottledFlush {
  /** Something changed: flush soon. */
  request(): void;
  close(): Promise<void>;
  readonly closed: boolean;
}

export function createThrottledFlush(opts: { clock: Clock; intervalMs: number; flush: () => Promise<void>; onError: (err: unknown) => void }): ThrottledFlush {
  let lastStart = -Infinity;
  let cancelTimer: (() => void) | undefined;
  let running: Promise<void> | undefined;
  let dirty = false;
  let closed = false;

  function request(): void {
    dirty = true;
    if (closed || cancelTimer || running) return;
    cancelTimer = opts.clock.setTimer(run, Math.max(0, lastStart + opts.intervalMs - opts.clock.now()));
  }

  function run(): void {
    cancelTimer = undefined;
    if (closed) return;
    dirty = false;
    lastStart = opts.clock.now();
    running = opts
      .flush()
      .catch(opts.onError)
      .finally(() => {
        running = undefined;
        if (dirty) request();
      });
  }

  return {
    request,
    async close() {
      closed = true;
      cancelTimer?.();
      cancelTimer = undefined;
      await running;
    },
    get closed() {
      return closed;
    },
  };
}
