import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { DueSource } from '../timers/due-timer.js';
import type { AuditLog } from './audit-log.js';

export const DAY_MS = 86_400_000;
/** How often old rows are looked for: the cut-off moves by a day a day, so hourly is plenty. */
const SWEEP_EVERY_MS = 3_600_000;
const KEY = 'audit:retention';

/**
 * HERMES_AUDIT_DAYS as a due item of the one timer (src/state/timers/due-timer.ts): once at
 * start, then hourly, rows older than `days` are deleted. Instances sharing a database may sweep
 * at the same time; the delete is the same for both, so nothing needs claiming.
 */
export function createAuditRetention(deps: { audit: Pick<AuditLog, 'prune'>; clock: Clock; log: Logger; days: number; everyMs?: number }): DueSource {
  const everyMs = deps.everyMs ?? SWEEP_EVERY_MS;
  let nextAt = deps.clock.now();
  return {
    kind: 'audit-retention',
    nextDueAt: async () => nextAt,
    async claim(now, limit, busy) {
      if (now < nextAt || limit < 1 || busy(KEY)) return { jobs: [], more: false };
      nextAt = now + everyMs;
      return {
        more: false,
        jobs: [
          {
            key: KEY,
            async run() {
              const before = now - deps.days * DAY_MS;
              const removed = await deps.audit.prune(before);
              if (removed > 0) deps.log.info({ removed, before: new Date(before).toISOString() }, 'audit: removed rows past HERMES_AUDIT_DAYS');
            },
          },
        ],
      };
    },
  };
}
