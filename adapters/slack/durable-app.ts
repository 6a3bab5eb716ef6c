import { createHash } from 'node:crypto';
import type { AppOptions } from '@slack/bolt';
import { App } from './bolt.js';
import type { ReceiverEvent } from '@slack/bolt';
import type { Logger } from '../../src/basics/log.js';
import type { ReceiptJournal } from '../../src/gateway/receipts.js';
import { ReceiptDedupe } from './event-dedupe.js';

/**
 * Bolt acknowledges a request inside `processEvent` (events before any listener runs; clicks and
 * commands when the listener calls ack). Both receivers — HTTP and Socket Mode — hand every request
 * to `processEvent`, so writing the body to the receipt journal first, here, makes whatever Slack
 * was told we received durable before the acknowledgement, in either mode, for one store write of
 * latency. The receipt is settled once the listeners finished: kept as done when the gateway took
 * the event (its id then reads as handled to a redelivery, see event-dedupe.ts), dropped otherwise;
 * `replayPending` runs what a crash left in between.
 */
export const REPLAY_MARK = 'hermes_replayed';

export class DurableApp extends App {
  /** The listeners' "already handled" for events, answered from each delivery's receipt. */
  readonly dedupe = new ReceiptDedupe();

  /**
   * `needsNothing`: true for a request every listener skips, judged from its body alone (the
   * message.channels twin of each channel mention): it does nothing, so a crash cannot lose
   * anything of it and it is not journaled.
   */
  constructor(options: AppOptions, private readonly receipts: ReceiptJournal, private readonly log: Logger, private readonly needsNothing: (body: Record<string, unknown>) => boolean = () => false) {
    super(options);
  }

  override async processEvent(event: ReceiverEvent): Promise<void> {
    // A request every listener skips is acknowledged as Bolt would acknowledge an event (an empty
    // 200), without Bolt's per-event work (authorize, context, client, every listener's matching):
    // half of a busy channel's deliveries are such twins of a mention.
    if (this.needsNothing(event.body)) return event.ack();
    const id = receiptId(event.body);
    if (!id) return super.processEvent(event);
    // A failed write throws before any ack: Slack sees an error and retries the delivery.
    const handledBefore = await this.receipts.add(id, event.body);
    if (!acknowledgedOnArrival(event.body)) return this.run(id, event, handledBefore);
    // Bolt acknowledges an Events API request before any listener, but only after authorizing it
    // and building its context and client; with the receipt durable, nothing of that needs to come
    // first. Answered now, the request's Bolt work waits behind the requests still being read
    // (the receiver's ack yields, requests-first.ts), and Bolt's own ack does nothing.
    await event.ack();
    await this.run(id, { ...event, ack: async () => undefined }, handledBefore);
  }

  /** Runs the listeners, then settles the receipt (a request handled before keeps its done row as it is). */
  private async run(id: string, event: ReceiverEvent, handledBefore: boolean): Promise<void> {
    const eventId = typeof event.body.event_id === 'string' ? event.body.event_id : undefined;
    if (eventId) this.dedupe.begin(eventId, handledBefore, id);
    let end = { handled: false, settled: false };
    try {
      await super.processEvent(event);
    } finally {
      if (eventId) end = this.dedupe.end(eventId);
      if (!handledBefore) {
        // Settled by the gateway: marked done in the statement that marked its message.
        const settle = end.settled ? this.receipts.doneAlready() : end.handled ? this.receipts.done(id) : this.receipts.drop(id);
        await settle.catch((err: Error) => this.log.warn({ err: err.message }, 'slack: could not settle a receipt'));
      }
    }
  }

  /** Runs requests that were acknowledged but not handed over when the process died. */
  async replayPending(): Promise<number> {
    const pending = await this.receipts.pending();
    for (const r of pending) {
      const body = typeof r.body === 'object' && r.body !== null ? { ...(r.body as Record<string, unknown>), [REPLAY_MARK]: true } : r.body;
      this.log.info({ receipt: r.id }, 'slack: replaying a request acknowledged before a restart');
      try {
        await this.run(r.id, { body: body as ReceiverEvent['body'], ack: async () => undefined }, false);
      } catch (err) {
        this.log.error({ err: (err as Error).message, receipt: r.id }, 'slack: replaying a request failed');
      }
    }
    const swept = await this.receipts.sweep().catch((err: Error) => {
      this.log.warn({ err: err.message }, 'slack: could not sweep old receipts');
      return 0;
    });
    if (swept > 0) this.log.info({ removed: swept }, 'slack: swept receipts of deliveries handled more than a day ago');
    return pending.length;
  }
}

/**
 * True for a body Bolt acknowledges on arrival, before any listener (an Events API event, but a
 * `function_executed`, which its listener acknowledges); clicks and commands are acknowledged by
 * their listeners, with an answer of their own.
 */
export function acknowledgedOnArrival(body: Record<string, unknown>): boolean {
  const event = body.event;
  return typeof event === 'object' && event !== null && (event as { type?: unknown }).type !== 'function_executed';
}

/** A stable id per delivery, so a replay and Slack's own retries land on the same receipt. */
export function receiptId(body: Record<string, unknown>): string | undefined {
  if (typeof body.event_id === 'string') return `event:${body.event_id}`;
  if (body.type === 'block_actions' || typeof body.command === 'string') {
    const trigger = typeof body.trigger_id === 'string' ? body.trigger_id : createHash('sha256').update(JSON.stringify(body)).digest('hex');
    return `${body.type === 'block_actions' ? 'action' : 'command'}:${trigger}`;
  }
  return undefined;
}
