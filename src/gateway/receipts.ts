import type { OpenedDatabase } from '../state/store/database.js';

/**
 * What a platform was told we received is on disk first. An adapter writes each accepted request
 * body here BEFORE it acknowledges it — one statement, the only one before the ack — and deletes
 * it once the gateway holds the message or decision durably (accepted, decided) or it needed
 * nothing. After a crash, `pending()` lists the bodies acknowledged but not yet handed over; the
 * adapter replays them, and the gateway's own dedupe (the inbound marks, the approval
 * compare-and-set) keeps a replay from acting twice. Rows live in `hermes_receipt`.
 */
export interface Receipt {
  id: string;
  body: unknown;
  receivedAt: number;
}

export interface ReceiptJournal {
  add(id: string, body: unknown): Promise<void>;
  done(id: string): Promise<void>;
  /** Oldest first. */
  pending(): Promise<Receipt[]>;
}

export function createReceiptJournal(database: OpenedDatabase, platform: string, now: () => number = Date.now): ReceiptJournal {
  const { db } = database;
  return {
    async add(id, body) {
      const row = { platform, id, body: JSON.stringify(body ?? null), received_at: now() };
      // A platform retry of a request still journaled keeps the first copy's place in line.
      await db.insertInto('hermes_receipt').values(row).onConflict((c) => c.columns(['platform', 'id']).doNothing()).execute();
    },
    async done(id) {
      await db.deleteFrom('hermes_receipt').where('platform', '=', platform).where('id', '=', id).execute();
    },
    async pending() {
      const rows = await db.selectFrom('hermes_receipt').selectAll().where('platform', '=', platform).orderBy('received_at').orderBy('id').execute();
      return rows.map((r) => ({ id: r.id, body: JSON.parse(r.body) as unknown, receivedAt: Number(r.received_at) }));
    },
  };
}
