import { sql } from 'kysely';
import type { Logger } from '../basics/log.js';
import type { InboundMessage } from '../basics/types.js';
import type { Store } from '../state/store/store.js';
import type { OpenedDatabase } from '../state/store/database.js';
import type { WorkItem } from '../state/cluster/work-queue.js';
import { moveRound2Sessions } from '../state/sessions/session-carry-over.js';
import { moveRound2Reminders, moveRound2Schedules } from '../state/timers/timer-carry-over.js';
import { moveKeyValueLeftovers } from '../state/store/leftover-carry-over.js';

/**
 * Work a round-2 data directory (or database) still holds is moved into the tables, once, at the
 * first start: accepted messages waiting in the key-value inbox (`inbox:<id>`), request bodies
 * acknowledged but not handed over (`receipt:<platform>:<id>`), and on PostgreSQL the rows of the
 * old `hermes_inbox` table, approval requests (`approval:record:<id>`) into `hermes_approval`, and
 * sessions with their history (session-carry-over.ts), reminders and schedules into
 * `hermes_reminder` / `hermes_schedule` with their work rows (timer-carry-over.ts). Facts stay where they are (the key-value store this version
 * still reads).
 *
 * A moved message is marked as started once (attempts = 1): its turn may have begun before the
 * upgrade, so the job checks the session history before answering, and reports rather than
 * repeats a turn that had started — the same rule as after a crash. Each entry is deleted after
 * its row is written, so a crash in between moves it again and the row's id keeps it single.
 */
interface OldInboxEntry {
  message: InboundMessage;
  receivedAt: number;
}
interface OldReceipt {
  id: string;
  body: unknown;
  receivedAt: number;
}

export interface CarryOverDeps<J> {
  store: Store;
  database: OpenedDatabase;
  log: Logger;
  /** The work row that answers a message (the gateway's own mapping). */
  turnFor(message: InboundMessage): WorkItem<J>;
  now(): number;
}

export interface CarriedOver {
  messages: number;
  receipts: number;
  sharedRows: number;
  approvals: number;
  sessions: number;
  historyMessages: number;
  conversations: number;
  reminders: number;
  schedules: number;
  /** States of turns waiting on an approval (`turn:<id>`), see leftover-carry-over.ts. */
  pausedTurns: number;
}

export async function carryOverRound2<J>(deps: CarryOverDeps<J>): Promise<CarriedOver> {
  const { store, database } = deps;
  const { db } = database;
  let messages = 0;
  let receipts = 0;
  const approvals = await moveApprovals(store, database);
  const moved = await moveRound2Sessions(store, database);
  const reminders = await moveRound2Reminders(store, database);
  const schedules = await moveRound2Schedules(store, database);
  const leftovers = await moveKeyValueLeftovers(store, database, deps.now());
  for (const key of await store.keysWithPrefix('inbox:')) {
    const entry = await store.get<OldInboxEntry>(key);
    if (entry?.message) {
      const item = deps.turnFor(entry.message);
      await db.transaction().execute(async (tx) => {
        await tx
          .insertInto('hermes_inbound')
          .values({ platform: entry.message.conversation.platform, id: entry.message.id, outcome: 'queued', accepted_at: entry.receivedAt })
          .onConflict((c) => c.columns(['platform', 'id']).doNothing())
          .execute();
        await tx
          .insertInto('hermes_work')
          .values({ id: item.id, kind: item.kind, lane: item.lane, order_key: item.order, due_at: entry.receivedAt, payload: JSON.stringify(item.job), claimed_by: null, claimed_until: null, attempts: 1, created_at: entry.receivedAt })
          .onConflict((c) => c.column('id').doNothing())
          .execute();
      });
      messages++;
    }
    await store.delete(key);
  }
  for (const key of await store.keysWithPrefix('receipt:')) {
    const parts = key.split(':').map(decodeURIComponent);
    const r = await store.get<OldReceipt>(key);
    if (r && parts.length === 3 && parts[2] !== 'index') {
      await db
        .insertInto('hermes_receipt')
        .values({ platform: parts[1]!, id: r.id, body: JSON.stringify(r.body ?? null), received_at: r.receivedAt })
        .onConflict((c) => c.columns(['platform', 'id']).doNothing())
        .execute();
      receipts++;
    }
    await store.delete(key);
  }
  const sharedRows = database.dialect === 'postgres' ? await moveOldSharedInbox(database) : 0;
  const out: CarriedOver = { messages, receipts, sharedRows, approvals, sessions: moved.sessions, historyMessages: moved.messages, conversations: moved.conversations, reminders, schedules, ...leftovers };
  if (Object.values(out).some((n) => n > 0)) {
    deps.log.info(out, 'carried round-2 state over into the tables (accepted messages, unacknowledged requests, shared inbox rows, approval requests, sessions with their history, conversations, reminders, schedules, paused turns)');
  }
  return out;
}

/** The part of a round-2 approval record the table keeps in columns. */
interface OldApproval {
  id: string;
  sessionId: string;
  status: string;
  expiresAt: number;
  createdAt: number;
}

/**
 * Round 2 kept each approval request as `approval:record:<id>` plus the list `approval:open`.
 * Every record becomes a row as it was (decided ones too, so an old button still gets "already
 * decided"); the record keeps its argument hash, checked on every read as before. A row already
 * there (a crash mid-move) is left as it is.
 */
async function moveApprovals(store: Store, database: OpenedDatabase): Promise<number> {
  let moved = 0;
  for (const key of await store.keysWithPrefix('approval:record:')) {
    const r = await store.get<OldApproval & Record<string, unknown>>(key);
    if (r && typeof r.id === 'string' && typeof r.sessionId === 'string' && typeof r.status === 'string') {
      const { status, tampered: _t, ...rest } = r;
      const res = await database.db
        .insertInto('hermes_approval')
        .values({ id: r.id, session_id: r.sessionId, status, expires_at: Number(r.expiresAt) || 0, created_at: Number(r.createdAt) || 0, record: JSON.stringify(rest) })
        .onConflict((c) => c.column('id').doNothing())
        .executeTakeFirst();
      if (Number(res.numInsertedOrUpdatedRows ?? 0n) > 0) moved++;
    }
    await store.delete(key);
  }
  await store.delete('approval:open');
  return moved;
}

/** Round 2 on PostgreSQL kept session work in `hermes_inbox`; its rows become work rows, in one statement. */
async function moveOldSharedInbox(database: OpenedDatabase): Promise<number> {
  const exists = await sql<{ t: string | null }>`select to_regclass('hermes_inbox')::text as t`.execute(database.db);
  if (!exists.rows[0]?.t) return 0;
  const moved = await sql<{ id: string }>`
    with old as (delete from hermes_inbox returning id, session_key, job, accepted_at, started_at)
    insert into hermes_work (id, kind, lane, order_key, due_at, payload, claimed_by, claimed_until, attempts, created_at)
    select id,
           case when job::json->>'kind' = 'resume' then 'resume' else 'turn' end,
           session_key,
           lpad((floor(extract(epoch from accepted_at) * 1000000))::bigint::text, 17, '0') || ':' || id,
           extract(epoch from accepted_at) * 1000, job, null, null,
           case when started_at is null then 0 else 1 end,
           extract(epoch from accepted_at) * 1000
    from old
    on conflict (id) do nothing
    returning id`.execute(database.db);
  return moved.rows.length;
}
