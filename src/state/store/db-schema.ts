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

/** A vote on a turn's answer (thumbs up or down), one per voter and turn; a new click replaces it. */
export interface FeedbackTable {
  turn_id: string;
  /** speakerKey of who voted. */
  voter: string;
  /** 'up' | 'down'. */
  vote: string;
  platform: string;
  /** conversationKey of where the answer was. */
  conversation: string;
  voted_at: number;
}

/**
 * Approval requests. `status` and `expires_at` are columns (indexed: the open ones are found by a
 * query, not a list); the rest of the record, the exact arguments included, is JSON in `record`
 * and is checked against its hash on every read. A status change is a compare-and-set on the
 * column, in the transaction that also writes whatever the decision sets off (the resume row).
 */
export interface ApprovalTable {
  id: string;
  session_id: string;
  status: string;
  expires_at: number;
  created_at: number;
  record: string;
}

/**
 * The audit record (src/state/audit/audit-log.ts): append-only; rows leave only by retention.
 * `actor` is `platform:userId` (the HERMES_ADMINS form), `channel` is `platform:channelId`.
 */
export interface AuditTable {
  /** Sorts by time: fixed-width `at` in base 36, then random letters. */
  id: string;
  at: number;
  kind: string;
  actor: string | null;
  channel: string | null;
  tool: string | null;
  /** sha256 of the canonical JSON of the tool's arguments (the approval record's hash). */
  args_hash: string | null;
  outcome: string;
  /** JSON object text, secrets redacted. */
  detail: string;
}

/** A conversation (or a scheduled task's own key): its live session and whether the bot joined the thread. */
export interface ConversationTable {
  key: string;
  current_session: string | null;
  /** 1 once the bot took part in the thread (it answers there without a mention). */
  joined: number;
}

export interface SessionTable {
  id: string;
  conversation_key: string;
  created_at: number;
  summary: string | null;
  /** Count of history messages covered by `summary`. */
  summarized_up_to: number;
  /** Set when /hermes new replaced it; kept, never deleted. */
  archived_at: number | null;
}

/** One history message: `seq` counts from 0 within its session; `body` is the message as JSON. */
export interface MessageTable {
  session_id: string;
  seq: number;
  body: string;
}

export interface Tables {
  hermes_inbound: InboundTable;
  hermes_receipt: ReceiptTable;
  hermes_work: WorkTable;
  hermes_approval: ApprovalTable;
  hermes_audit: AuditTable;
  hermes_feedback: FeedbackTable;
  hermes_conversation: ConversationTable;
  hermes_session: SessionTable;
  hermes_message: MessageTable;
}
