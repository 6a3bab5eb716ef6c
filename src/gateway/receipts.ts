import { COMMIT_AT_ONCE, reusableQuery, type OpenedDatabase } from '../state/store/database.js';

/**
 * What a platform was told we received is on disk first. An adapter writes each accepted request
 * body here BEFORE it acknowledges it — one statement, the only one before the ack — and settles
 * it once the listeners finished: `done` when the gateway holds what the request brought (the row
 * stays, as the mark that keeps a redelivery of the same event from being handled again), `drop`
 * when it needed nothing or failed (the row goes, so a redelivery gets another chance). A message's
 * receipt is usually marked done by the gateway itself, in the statement that marks the message
 * accepted (InboundMessage.receipt, inbox.ts): one statement fewer per message. After a
 * crash, `pending()` lists the bodies acknowledged but not yet settled; the adapter replays them,
 * and the gateway's own dedupe (the inbound marks, the approval compare-and-set) keeps a replay
 * from acting twice. Rows live in `hermes_receipt`; done ones are swept by their indexed
 * `done_at` after KEEP_DONE_MS.
 */
export interface Receipt {
  id: string;
  body: unknown;
  receivedAt: number;
}

/** Slack retries for a few minutes at most; a day covers reconnect replays with room to spare. */
export const KEEP_DONE_MS = 24 * 60 * 60 * 1000;
/** How often settling a receipt also sweeps the done ones past KEEP_DONE_MS. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;

export interface ReceiptJournal {
  /** Journals a request; true when the same request was handled (is `done`) before. */
  add(id: string, body: unknown): Promise<boolean>;
  /** The gateway holds what the request brought: kept as handled. */
  done(id: string): Promise<void>;
  /** As done, for a receipt the gateway marked done itself (inbox.ts): only the periodic sweep is left to do. */
  doneAlready(): Promise<void>;
  /** The request needed nothing, or handing it over failed: forgotten. */
  drop(id: string): Promise<void>;
  /** Acknowledged and not settled, oldest first. */
  pending(): Promise<Receipt[]>;
  /** Deletes done rows older than KEEP_DONE_MS; returns how many. */
  sweep(): Promise<number>;
}

export function createReceiptJournal(database: OpenedDatabase, platform: string, now: () => number = Date.now): ReceiptJournal {
  const { db } = database;
  let lastSweep = now();
  async function sweep(): Promise<number> {
    lastSweep = now();
    const r = await db.deleteFrom('hermes_receipt').where('platform', '=', platform).where('done_at', '<', now() - KEEP_DONE_MS).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
  // A receipt is written for every event request before its acknowledgement, and settled after:
  // built and compiled once (Kysely built and compiled the upsert again on every request, about a
  // tenth of an acknowledgement's CPU in the profile). On PostgreSQL the write goes over the
  // reserved connections (`urgent`): the ack must not wait behind the pool's turn work.
  // A platform retry of a request still journaled keeps the first copy's place in line (the update
  // writes the row's own time back); the one statement also says whether it was done. The
  // acknowledgement waits for this commit: on SQLite it must not wait for the loop turn to end.
  const addReceipt = reusableQuery<'id' | 'body' | 'receivedAt', { done_at: number | null }>(database.urgent, (v) =>
    database.urgent
      .insertInto('hermes_receipt')
      .values({ platform, id: v('id'), body: v('body'), received_at: v<number>('receivedAt') })
      .onConflict((c) => c.columns(['platform', 'id']).doUpdateSet({ received_at: (eb) => eb.ref('hermes_receipt.received_at') }))
      .returning('done_at')
      .modifyEnd(COMMIT_AT_ONCE),
  );
  const markDone = reusableQuery<'id' | 'doneAt', never>(db, (v) => db.updateTable('hermes_receipt').set({ done_at: v<number>('doneAt') }).where('platform', '=', platform).where('id', '=', v('id')));
  const deleteReceipt = reusableQuery<'id', never>(db, (v) => db.deleteFrom('hermes_receipt').where('platform', '=', platform).where('id', '=', v('id')));
  return {
    async add(id, body) {
      const { rows } = await addReceipt({ id, body: JSON.stringify(body ?? null), receivedAt: now() });
      const doneAt = rows[0]?.done_at;
      return doneAt !== null && doneAt !== undefined;
    },
    async done(id) {
      await markDone({ id, doneAt: now() });
      if (now() - lastSweep >= SWEEP_EVERY_MS) await sweep();
    },
    async doneAlready() {
      if (now() - lastSweep >= SWEEP_EVERY_MS) await sweep();
    },
    async drop(id) {
      await deleteReceipt({ id });
    },
    async pending() {
      const rows = await db.selectFrom('hermes_receipt').select(['id', 'body', 'received_at']).where('platform', '=', platform).where('done_at', 'is', null).orderBy('received_at').orderBy('id').execute();
      return rows.map((r) => ({ id: r.id, body: JSON.parse(r.body) as unknown, receivedAt: Number(r.received_at) }));
    },
    sweep,
  };
}
