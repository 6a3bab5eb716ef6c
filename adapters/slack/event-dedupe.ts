/**
 * "Already handled" for Events API deliveries, keyed by event_id, kept in the delivery's own
 * receipt row (src/gateway/receipts.ts): journaling a delivery reads whether the same event was
 * handled before (the row is `done`), in the one statement it writes before the ack, and settling
 * it marks it done only when the gateway took the message (queued, duplicate or ignored). So a
 * retry whose first delivery died before reaching the queue is processed, not dropped, and a
 * redelivered event (retries, reconnects) costs no name lookups and no gateway work, for no
 * statement of its own. The gateway dedupes on the message id as well.
 *
 * DurableApp opens an entry per event while its listeners run (`begin` … `end`); the listeners
 * ask and tell through `seen` and `markHandled`. An event that was not journaled (its body alone
 * says it needs nothing) has no entry: not seen, and marking it does nothing.
 */
export interface EventDedupe {
  seen(eventId: string): Promise<boolean>;
  markHandled(eventId: string): Promise<void>;
}

interface InFlight {
  seen: boolean;
  handled: boolean;
  /** Deliveries of this event whose listeners are running (a retry can overlap the first). */
  holders: number;
}

export class ReceiptDedupe implements EventDedupe {
  private readonly inFlight = new Map<string, InFlight>();

  /** A delivery of `eventId` starts; `seen`: its receipt said it was handled before. */
  begin(eventId: string, seen: boolean): void {
    const cur = this.inFlight.get(eventId);
    if (cur) {
      cur.holders += 1;
      cur.seen ||= seen;
    } else this.inFlight.set(eventId, { seen, handled: false, holders: 1 });
  }

  /** The delivery's listeners are done: whether one of them handed the event over. */
  end(eventId: string): boolean {
    const cur = this.inFlight.get(eventId);
    if (!cur) return false;
    cur.holders -= 1;
    if (cur.holders <= 0) this.inFlight.delete(eventId);
    return cur.handled;
  }

  async seen(eventId: string): Promise<boolean> {
    return this.inFlight.get(eventId)?.seen ?? false;
  }

  async markHandled(eventId: string): Promise<void> {
    const cur = this.inFlight.get(eventId);
    if (cur) cur.handled = true;
  }
}
