import type { DbOrTx, OpenedDatabase } from '../state/store/database.js';
import type { ReceiptSettled, WorkItem, WorkQueue } from '../state/cluster/work-queue.js';

/**
 * Accepting a message (or a task command) is one transaction: the dedupe mark in
 * `hermes_inbound` and the work row that will answer it commit together or not at all. So a
 * receipt replayed after a crash finds either nothing (and is accepted now) or the accepted
 * message (a duplicate, whose work is already queued) — never a mark without its message, which
 * is how acknowledged mentions used to go unanswered.
 *
 * What was accepted without work (a refusal, a note, the answer to an empty mention) is marked
 * the same way, so a retry does not answer twice. Marks are kept `KEEP_MS` (platform retries and
 * crash replays come within minutes) and swept by their indexed age.
 *
 * `receipt`: the adapter's receipt of the delivery that brought the message (receipts.ts). Marking
 * the message also marks it done, in the same statement on PostgreSQL (in the same savepoint on
 * SQLite), whether the mark is new or was there: either way the gateway holds what the delivery
 * brought. So the adapter's own "done" statement after the listeners is not needed, and a crash
 * between the two can no longer leave a receipt to replay for a message already accepted.
 */
export type InboundOutcome = 'queued' | 'noted' | 'refused' | 'answered';

const KEEP_MS = 3 * 24 * 60 * 60 * 1000;

export interface Inbox<J> {
  /** Marks the message and queues its work in one transaction; false when it was accepted before. */
  accept(platform: string, id: string, work: WorkItem<J>, receipt?: string): Promise<boolean>;
  /** Marks a message that needs no work; false when it was accepted before. */
  mark(platform: string, id: string, outcome: Exclude<InboundOutcome, 'queued'>, receipt?: string): Promise<boolean>;
  /** Deletes marks older than KEEP_MS; returns how many. */
  sweep(): Promise<number>;
}

export function createInbox<J>(database: OpenedDatabase, work: WorkQueue<J>, now: () => number): Inbox<J> {
  const { db } = database;
  const settle = (q: DbOrTx, r: ReceiptSettled) =>
    q.updateTable('hermes_receipt').set({ done_at: r.doneAt }).where('platform', '=', r.platform).where('id', '=', r.id).where('done_at', 'is', null).execute();
  const receiptOf = (platform: string, id: string | undefined): ReceiptSettled | undefined => (id === undefined ? undefined : { platform, id, doneAt: now() });
  /** The mark (and what `rest` writes when it is new) and the receipt settled, in one transaction (a savepoint inside the group commit on SQLite). */
  function markInTransaction(platform: string, id: string, outcome: InboundOutcome, receipt: ReceiptSettled | undefined, rest?: (tx: DbOrTx) => Promise<unknown>): Promise<boolean> {
    return db.transaction().execute(async (tx) => {
      const r = await tx
        .insertInto('hermes_inbound')
        .values({ platform, id, outcome, accepted_at: now() })
        .onConflict((c) => c.columns(['platform', 'id']).doNothing())
        .executeTakeFirst();
      if (receipt) await settle(tx, receipt);
      if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
      await rest?.(tx);
      return true;
    });
  }
  return {
    async accept(platform, id, item, receiptId) {
      const receipt = receiptOf(platform, receiptId);
      // PostgreSQL: the same in one statement (a writable CTE), two round trips fewer than BEGIN … COMMIT.
      const accepted = work.addMarked
        ? await work.addMarked({ platform, id, acceptedAt: now() }, item, receipt)
        : await markInTransaction(platform, id, 'queued', receipt, (tx) => work.addIn(tx, item));
      if (accepted) work.wake(item.lane);
      return accepted;
    },
    async mark(platform, id, outcome, receiptId) {
      const receipt = receiptOf(platform, receiptId);
      if (receipt && database.dialect === 'postgres') {
        // One statement (a writable CTE): the mark and the receipt settled commit together without BEGIN and COMMIT.
        const row = await db
          .with('mark', (q) => q.insertInto('hermes_inbound').values({ platform, id, outcome, accepted_at: now() }).onConflict((c) => c.columns(['platform', 'id']).doNothing()).returning('id'))
          .with('settled', (q) => q.updateTable('hermes_receipt').set({ done_at: receipt.doneAt }).where('platform', '=', platform).where('id', '=', receipt.id).where('done_at', 'is', null).returning('id'))
          .selectFrom('mark')
          .select((eb) => eb.fn.countAll<string | number>().as('n'))
          .executeTakeFirst();
        return Number(row?.n ?? 0) > 0;
      }
      if (receipt) return markInTransaction(platform, id, outcome, receipt);
      const r = await db
        .insertInto('hermes_inbound')
        .values({ platform, id, outcome, accepted_at: now() })
        .onConflict((c) => c.columns(['platform', 'id']).doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async sweep() {
      const r = await db.deleteFrom('hermes_inbound').where('accepted_at', '<', now() - KEEP_MS).executeTakeFirst();
      return Number(r.numDeletedRows);
    },
  };
}
