/**
 * Durable "already handled" marks for Events API deliveries, keyed by event_id.
 *
 * A mark is written only after the gateway took the message (queued, duplicate or ignored), so a
 * retry whose first delivery died before reaching the queue is processed, not dropped. The gateway
 * dedupes on the message id as well; this layer keeps redelivered events (retries, reconnects)
 * from costing name lookups and gateway work. Store failures never block a message.
 */
import type { Logger } from '../../src/basics/log.js';
import { storeKey, type Store } from '../../src/state/store/store.js';

/** Slack retries for a few minutes at most; a day covers reconnect replays with room to spare. */
const SEEN_TTL_MS = 24 * 60 * 60 * 1000;

export interface EventDedupe {
  seen(eventId: string): Promise<boolean>;
  markHandled(eventId: string): Promise<void>;
}

export function createEventDedupe(store: Store, log: Logger): EventDedupe {
  const key = (id: string) => storeKey('slack', 'event', id);
  return {
    async seen(eventId) {
      try {
        return (await store.get<number>(key(eventId))) !== undefined;
      } catch (err) {
        log.warn({ err, eventId }, 'slack: dedupe read failed; processing the event');
        return false;
      }
    },
    async markHandled(eventId) {
      try {
        await store.set(key(eventId), 1, SEEN_TTL_MS);
      } catch (err) {
        log.warn({ err, eventId }, 'slack: dedupe write failed; the gateway still dedupes on the message id');
      }
    },
  };
}
