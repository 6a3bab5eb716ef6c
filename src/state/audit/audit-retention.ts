import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { AuditLog } from './audit-log.js';

export const DAY_MS = 86_400_000;
/** How often old rows are looked for: the cut-off moves by a day a day, so hourly is plenty. */
const SWEEP_EVERY_MS = 3_600_000;

export interface Retention {
  start(): void;
  /** No sweep starts from now on. */
  stop(): void;
  /** Resolves when no sweep is running. */
  idle(): Promise<void>;
}

/**
 * HERMES_AUDIT_DAYS: once at start, then hourly, audit rows older than `days` are deleted (an
 * indexed delete on `at`), and so are the rows of other tables given in `prune` (reminders that
 * ended long ago). Instances sharing a database may sweep at the same time; the delete is the same
 * for both, so nothing needs claiming.
 */
export function createAuditRetention(deps: {
  audit: Pick<AuditLog, 'prune'>;
  clock: Clock;
  log: Logger;
  days: number;
  everyMs?: number;
  /** Further sweeps, each given the time now; they return how many rows went. */
  prune?: Array<{ what: string; run(now: number): Promise<number> }>;
}): Retention {
  const everyMs = deps.everyMs ?? SWEEP_EVERY_MS;
  let running = false;
  let cancel: (() => void) | undefined;
  let sweeping: Promise<void> = Promise.resolve();

  async function sweep(): Promise<void> {
    const now = deps.clock.now();
    const before = now - deps.days * DAY_MS;
    try {
      const removed = await deps.audit.prune(before);
      if (removed > 0) deps.log.info({ removed, before: new Date(before).toISOString() }, 'audit: removed rows past HERMES_AUDIT_DAYS');
      for (const p of deps.prune ?? []) {
        const n = await p.run(now);
        if (n > 0) deps.log.info({ removed: n, what: p.what }, 'retention: removed old rows');
      }
    } catch (err) {
      deps.log.warn({ err: (err as Error).message }, 'retention sweep failed; trying again at the next one');
    }
  }

  function next(ms: number): void {
    cancel = deps.clock.setTimer(() => {
      if (!running) return;
      sweeping = sweep().finally(() => {
        if (running) next(everyMs);
      });
    }, ms);
  }

  return {
    start() {
      if (running) return;
      running = true;
      next(0);
    },
    stop() {
      running = false;
      cancel?.();
    },
    idle: () => sweeping,
  };
}
