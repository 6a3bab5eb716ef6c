import type { Generated } from 'kysely';

/**
 * The operational tables, as the typed query layer (Kysely) sees them. One definition serves
 * SQLite and PostgreSQL: the migrations (migrations.ts) create exactly these columns on both.
 *
 * Times are epoch milliseconds in `double precision` columns: both drivers return them as plain
 * numbers (PostgreSQL's bigint would come back as a string), and a double holds every
 * millisecond until the year 287,396 exactly.
 */
export interface InboundTable {
  /** 'slack' | 'discord' | 'shell' (whatever the adapter names itself). */
  platform: string;
  /** The platform's own id of the message, click or command (the dedupe key). */
  id: string;
  /** What accepting decided: 'queued' (a work row was written with it), 'noted', 'refused', 'answered'. */
  outcome: string;
  accepted_at: number;
}

export interface ReceiptTable {
  platform: string;
  id: string;
  /** The request body as JSON text, replayed after a crash. */
  body: string;
  received_at: number;
}

/**
 * Every kind of work, in one table: turns, approval resumes, reminders, scheduled runs. Rows of
 * one lane (a conversation's session) run one at a time in `order_key` order; different lanes run
 * in parallel. A row is claimed by setting `claimed_by`/`claimed_until` (a lease renewed while it
 * runs) and deleted when its work has ended.
 */
export interface WorkTable {
  id: string;
  kind: string;
  lane: string;
  /** Fixed-width sortable text: the platform's own order (see order-key.ts). */
  order_key: string;
  due_at: number;
  /** The job as JSON text. */
  payload: string;
  claimed_by: string | null;
  claimed_until: number | null;
  /** How often the row was claimed: a row claimed before and still here was cut off mid-run. */
  attempts: number;
  created_at: number;
}

/** A message the bot accepted or answered, for search_conversations (recall-schema.ts). */
export interface MessageTable {
  seq: Generated<number>;
  /** Unique per message: platform + the inbound id, or the answer's own id. */
  id: string;
  platform: string;
  workspace_id: string;
  channel_id: string;
  /** '' for a top-level post. */
  thread_id: string;
  parent_channel_id: string | null;
  /** The speaker key of the person whose DM this is; null outside DMs. */
  dm_owner: string | null;
  /** Speaker key of the writer, or 'bot'. */
  author: string;
  author_name: string | null;
  text: string;
  at: number;
}

/** Who took part where: a person's own message makes them a member of that channel and thread. */
export interface RecallMemberTable {
  member: string;
  platform: string;
  workspace_id: string;
  channel_id: string;
  thread_id: string;
  since: number;
}

/** One embedding vector per message ('message', ref = message id) or fact ('fact', ref = owner + fact id). */
export interface EmbeddingTable {
  kind: string;
  ref: string;
  /** Speaker key for facts; null for messages (their visibility comes from hermes_message). */
  owner: string | null;
  model: string;
  /** Float32 values, base64. */
  vector: string;
  at: number;
}

/** A channel's standing notes (`/hermes notes set`). */
export interface ChannelNoteTable {
  platform: string;
  workspace_id: string;
  channel_id: string;
  text: string;
  set_by: string;
  set_at: number;
}

export interface Tables {
  hermes_inbound: InboundTable;
  hermes_receipt: ReceiptTable;
  hermes_work: WorkTable;
  hermes_message: MessageTable;
  hermes_recall_member: RecallMemberTable;
  hermes_embedding: EmbeddingTable;
  hermes_channel_note: ChannelNoteTable;
}
