import type { OpenedDatabase } from '../state/store/database.js';
import type { WorkItem, WorkQueue } from '../state/cluster/work-queue.js';

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
 */
export type InboundOutcome = 'queued' | 'noted' | 'refused' | 'answered';

const KEEP_MS = 3 * 24 * 60 * 60 * 1000;

export interface Inbox<J> {
  /** Marks the message and queues its work in one transaction; false when it was accepted before. */
  accept(platform: string, id: string, work: WorkItem<J>): Promise<boolean>;
  /** Marks a message that needs no work; false when it was accepted before. */
  mark(platform: string, id: string, outcome: Exclude<InboundOutcome, 'queued'>): Promise<boolean>;
  /** Deletes marks older than KEEP_MS; returns how many. */
  sweep(): Promise<number>;
}

export function createInbox<J>(database: OpenedDatabase, work: WorkQueue<J>, now: () => number): Inbox<J> {
  const { db } = database;
  function acceptInTransaction(platform: string, id: string, item: WorkItem<J>): Promise<boolean> {
    return db.transaction().execute(async (tx) => {
      const r = await tx
        .insertInto('hermes_inbound')
        .values({ platform, id, outcome: 'queued', accepted_at: now() })
        .onConflict((c) => c.columns(['platform', 'id']).doNothing())
        .executeTakeFirst();
      if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
      await work.addIn(tx, item);
      return true;
    });
  }
  return {
    async accept(platform, id, item) {
      // PostgreSQL: the same in one statement (a writable CTE), two round trips fewer than BEGIN … COMMIT.
      const accepted = work.addMarked ? await work.addMarked({ platform, id, acceptedAt: now() }, item) : await acceptInTransaction(platform, id, item);
      if (accepted) work.wake(item.lane);
      return accepted;
    },
    async mark(platform, id, outcome) {
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
