import type { Clock } from '../../basics/clock.js';
import { storeKey, type Store } from '../../state/store/store.js';

/**
 * HERMES_USER_RATE as a token bucket per person: `perMinute` tokens, refilled one every
 * 60/perMinute seconds, so a person may send a burst of `perMinute` messages and then one per
 * refill. Stored as one number per person, the time the bucket will be full again (the "theoretical
 * arrival time" of GCRA, which is the same bucket without a timer), and changed only through the
 * store's per-key update, so two instances never hand out the same token.
 */

export type RateVerdict = { ok: true } | { ok: false; retryAfterMs: number };

export interface RateLimiter {
  readonly perMinute: number;
  /** Takes one token for `person`, or says how long until one is free. */
  take(person: string): Promise<RateVerdict>;
}

export function createRateLimiter(deps: { store: Store; clock: Clock; perMinute: number }): RateLimiter {
  const { store, clock, perMinute } = deps;
  const interval = 60_000 / perMinute;
  // A full bucket lets `perMinute` messages through at once: the first needs no slack, the rest one interval each.
  const burstSlack = interval * (perMinute - 1);

  return {
    perMinute,
    async take(person) {
      const now = clock.now();
      let verdict: RateVerdict = { ok: true };
      await store.update<number>(storeKey('rate', person), (fullAt) => {
        const from = Math.max(fullAt ?? now, now);
        if (from - now > burstSlack) {
          verdict = { ok: false, retryAfterMs: Math.ceil(from - now - burstSlack) };
          return undefined; // a refused message takes no token
        }
        verdict = { ok: true };
        return from + interval;
      });
      return verdict;
    },
  };
}
