import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { StartupRefusal } from '../../basics/startup-refusal.js';
import { recallFtsTriggerStep, recallMemberTriggerStep, recallPlaceStep, recallSearchRowStep, recallTablesStep } from './recall-schema.js';
import { inboxAcceptClaimedStep, inboxAcceptStep } from './inbox-schema.js';
import { sessionStartStep } from './session-schema.js';
import { usageChargeStep } from './usage-schema.js';

/**
 * The schema as ordered steps, the same on SQLite and PostgreSQL (Kysely's schema builder writes
 * each dialect's DDL). A step is never edited once released: a change is a new step. Steps are
 * applied at start, in a transaction each; on PostgreSQL instances starting together wait on the
 * migrator's lock table, so one migrates and the others find the work done.
 */
const steps: Record<string, Migration> = {
  '0001-inbound-receipts-work': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('hermes_inbound')
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('accepted_at', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_inbound_pk', ['platform', 'id'])
        .execute();
      // Dedupe marks are swept by age; the sweep reads this index, never a TTL inside a value.
      await db.schema.createIndex('hermes_inbound_age').on('hermes_inbound').column('accepted_at').execute();

      await db.schema
        .createTable('hermes_receipt')
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('received_at', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_receipt_pk', ['platform', 'id'])
        .execute();

      await db.schema
        .createTable('hermes_work')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('lane', 'text', (c) => c.notNull())
        .addColumn('order_key', 'text', (c) => c.notNull())
        .addColumn('due_at', 'double precision', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_until', 'double precision')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'double precision', (c) => c.notNull())
        .execute();
      // The claim looks for due rows (due_at) that head their lane (lane, order_key).
      await db.schema.createIndex('hermes_work_due').on('hermes_work').column('due_at').execute();
      await db.schema.createIndex('hermes_work_lane').on('hermes_work').columns(['lane', 'order_key', 'id']).execute();
    },
  },
  '0002-durable-approvals': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('hermes_approval')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('session_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'double precision', (c) => c.notNull())
        .addColumn('created_at', 'double precision', (c) => c.notNull())
        .addColumn('record', 'text', (c) => c.notNull())
        .execute();
      // Open requests by status and expiry (start-up, the expiry watch, /hermes status), and a
      // session's open ones (each turn): indexed queries instead of one shared list every instance writes.
      await db.schema.createIndex('hermes_approval_status').on('hermes_approval').columns(['status', 'expires_at']).execute();
      await db.schema.createIndex('hermes_approval_session').on('hermes_approval').columns(['session_id', 'status']).execute();
    },
  },
  '0003-audit': {
    async up(db: Kysely<unknown>) {
      // Append-only: the code has no update of it, and deletes only rows past HERMES_AUDIT_DAYS.
      await db.schema
        .createTable('hermes_audit')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('at', 'double precision', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('actor', 'text')
        .addColumn('channel', 'text')
        .addColumn('tool', 'text')
        .addColumn('args_hash', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('detail', 'text', (c) => c.notNull())
        .execute();
      // The page lists newest first, filtered by one of these; retention deletes by `at`.
      await db.schema.createIndex('hermes_audit_at').on('hermes_audit').columns(['at', 'id']).execute();
      await db.schema.createIndex('hermes_audit_kind').on('hermes_audit').columns(['kind', 'at']).execute();
      await db.schema.createIndex('hermes_audit_actor').on('hermes_audit').columns(['actor', 'at']).execute();
      await db.schema.createIndex('hermes_audit_channel').on('hermes_audit').columns(['channel', 'at']).execute();
    },
  },
  '0004-feedback': {
    async up(db: Kysely<unknown>) {
      // One row per (turn, voter): a second click replaces the vote. The requester and place are
      // copied in so stats and `eval --from-feedback` need no other table.
      await db.schema
        .createTable('hermes_feedback')
        .addColumn('turn_id', 'text', (c) => c.notNull())
        .addColumn('voter', 'text', (c) => c.notNull())
        .addColumn('vote', 'text', (c) => c.notNull())
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('conversation', 'text', (c) => c.notNull())
        .addColumn('voted_at', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_feedback_pk', ['turn_id', 'voter'])
        .execute();
      // Stats and the eval export read a time window.
      await db.schema.createIndex('hermes_feedback_time').on('hermes_feedback').column('voted_at').execute();
    },
  },
  '0005-durable-sessions': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('hermes_conversation')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('current_session', 'text')
        .addColumn('joined', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createTable('hermes_session')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('conversation_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'double precision', (c) => c.notNull())
        .addColumn('summary', 'text')
        .addColumn('summarized_up_to', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('archived_at', 'double precision')
        .execute();
      await db.schema.createIndex('hermes_session_conversation').on('hermes_session').columns(['conversation_key', 'created_at']).execute();
      await db.schema
        .createTable('hermes_message')
        .addColumn('session_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_message_pk', ['session_id', 'seq'])
        .execute();
    },
  },
  '0006-recall-messages-notes': recallTablesStep,
  '0007-timers': {
    async up(db: Kysely<unknown>) {
      // Reminders and scheduled tasks: the record, with the columns list, limits and status read.
      // When one fires is not kept here but in its hermes_work row (kind 'reminder' or 'scheduled',
      // due_at = the fire time), written in the same transaction: the queue's indexed due-time
      // claim is the one timer, and no row is written by every instance.
      await db.schema
        .createTable('hermes_reminder')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_key', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('due_at', 'double precision', (c) => c.notNull())
        .addColumn('created_at', 'double precision', (c) => c.notNull())
        .addColumn('record', 'text', (c) => c.notNull())
        .execute();
      // A person's open reminders (list, the per-user limit); counts by status (/hermes status).
      await db.schema.createIndex('hermes_reminder_owner').on('hermes_reminder').columns(['owner_key', 'status', 'due_at']).execute();
      await db.schema.createIndex('hermes_reminder_status').on('hermes_reminder').columns(['status', 'due_at']).execute();
      await db.schema
        .createTable('hermes_schedule')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_key', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('next_due_at', 'double precision')
        .addColumn('created_at', 'double precision', (c) => c.notNull())
        .addColumn('record', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('hermes_schedule_owner').on('hermes_schedule').columns(['owner_key', 'status', 'created_at']).execute();
      await db.schema.createIndex('hermes_schedule_status').on('hermes_schedule').columns(['status', 'next_due_at']).execute();
    },
  },
  '0008-recall-fts-trigger': recallFtsTriggerStep,
  '0009-recall-place': recallPlaceStep,
  '0010-key-value-leftovers': {
    async up(db: Kysely<unknown>) {
      // What the key-value store still held besides user facts, each in a table of its own.
      // Anything that expires has an indexed time column its sweep reads; no TTL inside a value.

      // A turn waiting on an approval: its state, read back when the decision resumes it.
      await db.schema
        .createTable('hermes_paused_turn')
        .addColumn('turn_id', 'text', (c) => c.primaryKey())
        .addColumn('session_id', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('paused_at', 'double precision', (c) => c.notNull())
        .execute();

      // A delivery whose listeners finished is kept as done (Slack's event-id dedupe) instead of
      // being deleted, until the sweep by this index removes it.
      await db.schema.alterTable('hermes_receipt').addColumn('done_at', 'double precision').execute();
      await db.schema.createIndex('hermes_receipt_done').on('hermes_receipt').column('done_at').execute();

      // Messages of a joined thread that were not for the bot, kept for its next turn there.
      await db.schema
        .createTable('hermes_noted_message')
        .addColumn('conversation', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('at', 'double precision', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_noted_message_pk', ['conversation', 'id'])
        .execute();

      // Daily token counts: a person's ('person') or a shared budget's ('pool'), per UTC day.
      await db.schema
        .createTable('hermes_usage')
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('tokens', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_usage_pk', ['day', 'kind', 'subject'])
        .execute();

      // Once-per-interval notices (the access refusal note, the bot budget warning): a row until `until`.
      await db.schema
        .createTable('hermes_notice')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('until', 'double precision', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('hermes_notice_until').on('hermes_notice').column('until').execute();

      // HERMES_USER_RATE: when each person's bucket is full again (a full bucket is no row).
      await db.schema
        .createTable('hermes_rate')
        .addColumn('person', 'text', (c) => c.primaryKey())
        .addColumn('full_at', 'double precision', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('hermes_rate_full').on('hermes_rate').column('full_at').execute();

      // A person's last-seen platform roles, for checks that come without an event (clicks).
      await db.schema
        .createTable('hermes_person_roles')
        .addColumn('person', 'text', (c) => c.primaryKey())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('seen_at', 'double precision', (c) => c.notNull())
        .execute();

      // Slack assistant threads the app was told of, and whether the first request titled one.
      await db.schema
        .createTable('hermes_assistant_thread')
        .addColumn('channel_id', 'text', (c) => c.notNull())
        .addColumn('thread_ts', 'text', (c) => c.notNull())
        .addColumn('titled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('started_at', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('hermes_assistant_thread_pk', ['channel_id', 'thread_ts'])
        .execute();
      await db.schema.createIndex('hermes_assistant_thread_age').on('hermes_assistant_thread').column('started_at').execute();
    },
  },
  '0011-recall-member-trigger': recallMemberTriggerStep,
  '0012-session-start': sessionStartStep,
  '0013-recall-search-row': recallSearchRowStep,
  '0014-inbox-accept': inboxAcceptStep,
  '0015-usage-charge': usageChargeStep,
  '0016-inbox-accept-claimed': inboxAcceptClaimedStep,
};

const provider: MigrationProvider = { getMigrations: async () => steps };

export const MIGRATION_NAMES = Object.keys(steps).sort();

/**
 * Brings the database to the newest step. `schema` names the PostgreSQL schema the tables live in
 * (the first on the search path), so the migrator's own bookkeeping lands next to them.
 */
export async function migrateToLatest(db: Kysely<unknown>, opts: { schema?: string } = {}): Promise<{ applied: string[] }> {
  return migrate(db, opts);
}

/** Brings the database up to (and including) one named step: tests of a later step start from there. */
export async function migrateUpTo(db: Kysely<unknown>, step: string, opts: { schema?: string } = {}): Promise<{ applied: string[] }> {
  if (!(step in steps)) throw new Error(`no schema step ${step}`);
  return migrate(db, { ...opts, upTo: step });
}

async function migrate(db: Kysely<unknown>, opts: { schema?: string; upTo?: string }): Promise<{ applied: string[] }> {
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'hermes_migration',
    migrationLockTableName: 'hermes_migration_lock',
    ...(opts.schema !== undefined && { migrationTableSchema: opts.schema }),
  });
  const { error, results } = opts.upTo === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(opts.upTo);
  if (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A database migrated by a newer hermes has steps this one does not know.
    if (/corrupted migrations/i.test(message)) {
      throw new StartupRefusal(
        `the database has schema steps this hermes does not know (${message}): a newer hermes has migrated it. Run that version (or newer) against it.`,
      );
    }
    throw new Error(`schema migration failed: ${message}`, { cause: error });
  }
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}

/** PostgreSQL: the schema unqualified names resolve to (a test puts its own first on the search path). */
export async function currentSchema(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema ?? 'public';
}
