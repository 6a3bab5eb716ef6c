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
  /** The id of the receipt journaling this delivery, for the gateway to settle with the message's mark. */
  receiptOf(eventId: string): string | undefined;
  /** `settled`: the gateway marked the receipt done already (settlesReceipt), so no statement of its own is needed. */
  markHandled(eventId: string, settled?: boolean): Promise<void>;
}

interface InFlight {
  seen: boolean;
  handled: boolean;
  /** The gateway marked the delivery's receipt done itself (in the statement that marked the message). */
  settled: boolean;
  receipt: string | undefined;
  /** Deliveries of this event whose listeners are running (a retry can overlap the first). */
  holders: number;
}

export class ReceiptDedupe implements EventDedupe {
  private readonly inFlight = new Map<string, InFlight>();

  /** A delivery of `eventId` starts; `seen`: its receipt said it was handled before; `receipt`: that receipt's id. */
  begin(eventId: string, seen: boolean, receipt?: string): void {
    const cur = this.inFlight.get(eventId);
    if (cur) {
      cur.holders += 1;
      cur.seen ||= seen;
      cur.receipt ??= receipt;
    } else this.inFlight.set(eventId, { seen, handled: false, settled: false, receipt, holders: 1 });
  }

  /** The delivery's listeners are done: whether one of them handed the event over, and whether the gateway settled its receipt. */
  end(eventId: string): { handled: boolean; settled: boolean } {
    const cur = this.inFlight.get(eventId);
    if (!cur) return { handled: false, settled: false };
    cur.holders -= 1;
    if (cur.holders <= 0) this.inFlight.delete(eventId);
    return { handled: cur.handled, settled: cur.handled && cur.settled };
  }

  async seen(eventId: string): Promise<boolean> {
    return this.inFlight.get(eventId)?.seen ?? false;
  }

  receiptOf(eventId: string): string | undefined {
    return this.inFlight.get(eventId)?.receipt;
  }

  async markHandled(eventId: string, settled = false): Promise<void> {
    const cur = this.inFlight.get(eventId);
    if (!cur) return;
    cur.handled = true;
    cur.settled ||= settled;
  }
}
