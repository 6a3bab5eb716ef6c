import type { Clock } from '../../basics/clock.js';
import type { OpenedDatabase } from '../../state/store/database.js';
import { createRateBuckets, type RateVerdict } from '../../state/usage/access-tables.js';

/**
 * HERMES_USER_RATE as a token bucket per person: `perMinute` tokens, refilled one every
 * 60/perMinute seconds, so a person may send a burst of `perMinute` messages and then one per
 * refill. Stored as one number per person (`hermes_rate`), the time the bucket will be full again
 * (the "theoretical arrival time" of GCRA, which is the same bucket without a timer), and changed
 * only by one conditional upsert, so two instances never hand out the same token.
 */

export type { RateVerdict };

export interface RateLimiter {
  readonly perMinute: number;
  /** Takes one token for `person`, or says how long until one is free. */
  take(person: string): Promise<RateVerdict>;
}

export function createRateLimiter(deps: { database: OpenedDatabase; clock: Clock; perMinute: number }): RateLimiter {
  const { clock, perMinute } = deps;
  const interval = 60_000 / perMinute;
  // A full bucket lets `perMinute` messages through at once: the first needs no slack, the rest one interval each.
  const burstSlack = interval * (perMinute - 1);
  const buckets = createRateBuckets(deps.database, () => clock.now());
  return {
    perMinute,
    take: (person) => buckets.take(person, interval, burstSlack),
  };
}
