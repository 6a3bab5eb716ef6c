import { sql, type Kysely, type Migration } from 'kysely';
import { isPostgres } from './recall-schema.js';

/** What accepting a message says when its dedupe mark is there already (a replay, a retry). */
export const ALREADY_ACCEPTED = 'hermes: the message was accepted before';

/**
 * Step 0014 (SQLite): accepting a message is one statement. `hermes_accept` is a view nothing is
 * stored in; inserting a row into it runs a trigger that settles the delivery's receipt (when
 * `receipt_id` is given), writes the dedupe mark in `hermes_inbound` and, when `work_id` is given,
 * the work row that will answer it. It was three statements in a savepoint (the mark, the receipt
 * settled, the row). If the mark is there already the statement fails with ALREADY_ACCEPTED and
 * writes nothing, not even the receipt: the caller then settles it the old way, which a duplicate
 * (a platform retry, a crash replay) is rare enough to pay for. One statement is atomic by itself,
 * so a mark never lands without its row, nor a row without its mark.
 *
 * PostgreSQL already accepts in one statement, a writable CTE (pg-work-queue.ts, `addMarked`), so
 * there the step creates nothing.
 */
export const inboxAcceptStep: Migration = {
  async up(db: Kysely<unknown>) {
    if (isPostgres(db)) return;
    await sql`create view hermes_accept as
      select i.platform, i.id, i.outcome, i.accepted_at, '' as receipt_id, 0.0 as done_at,
        w.id as work_id, w.kind, w.lane, w.order_key, w.due_at, w.payload, w.created_at
      from hermes_inbound i, hermes_work w where 0`.execute(db);
    // RAISE(ABORT) undoes this statement's own writes and nothing else of the open transaction.
    // `where true`: SQLite reads an upsert after `insert … select` only with a where clause.
    await sql`create trigger hermes_accept instead of insert on hermes_accept
      begin
        select raise(abort, '${sql.raw(ALREADY_ACCEPTED)}')
          where exists (select 1 from hermes_inbound where platform = new.platform and id = new.id);
        insert into hermes_inbound (platform, id, outcome, accepted_at) values (new.platform, new.id, new.outcome, new.accepted_at);
        update hermes_receipt set done_at = new.done_at
          where new.receipt_id is not null and platform = new.platform and id = new.receipt_id and done_at is null;
        insert into hermes_work (id, kind, lane, order_key, due_at, payload, claimed_by, claimed_until, attempts, created_at)
          select new.work_id, new.kind, new.lane, new.order_key, new.due_at, new.payload, null, null, 0, new.created_at
          where new.work_id is not null
          on conflict (id) do nothing;
      end`.execute(db);
  },
};

/**
 * Step 0016 (SQLite): the accept may write its work row already claimed. A lone instance with room
 * whose lane has nothing waiting or running writes the row with `claimed_by`, `claimed_until` and
 * `attempts` = 1 and runs it as soon as the statement is committed, without a claim statement
 * (local-work-queue.ts). A work row already there under the message's id (written with its mark,
 * so accepted before) now refuses the statement as a duplicate, where it was skipped: a reserved
 * row must never stand for a row that was not written.
 */
export const inboxAcceptClaimedStep: Migration = {
  async up(db: Kysely<unknown>) {
    if (isPostgres(db)) return;
    await sql`drop trigger hermes_accept`.execute(db);
    await sql`drop view hermes_accept`.execute(db);
    await sql`create view hermes_accept as
      select i.platform, i.id, i.outcome, i.accepted_at, '' as receipt_id, 0.0 as done_at,
        w.id as work_id, w.kind, w.lane, w.order_key, w.due_at, w.payload, w.created_at,
        w.claimed_by, w.claimed_until, w.attempts
      from hermes_inbound i, hermes_work w where 0`.execute(db);
    await sql`create trigger hermes_accept instead of insert on hermes_accept
      begin
        select raise(abort, '${sql.raw(ALREADY_ACCEPTED)}')
          where exists (select 1 from hermes_inbound where platform = new.platform and id = new.id)
            or exists (select 1 from hermes_work where id = new.work_id);
        insert into hermes_inbound (platform, id, outcome, accepted_at) values (new.platform, new.id, new.outcome, new.accepted_at);
        update hermes_receipt set done_at = new.done_at
          where new.receipt_id is not null and platform = new.platform and id = new.receipt_id and done_at is null;
        insert into hermes_work (id, kind, lane, order_key, due_at, payload, claimed_by, claimed_until, attempts, created_at)
          select new.work_id, new.kind, new.lane, new.order_key, new.due_at, new.payload, new.claimed_by, new.claimed_until, coalesce(new.attempts, 0), new.created_at
          where new.work_id is not null;
      end`.execute(db);
  },
};
