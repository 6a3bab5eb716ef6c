import type { ColumnType, Generated } from 'kysely';

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
  /**
   * Set when the listeners finished with the gateway holding what the request brought (0010):
   * the row then stays as the event-id dedupe mark until swept by this (indexed) time.
   */
  done_at: ColumnType<number | null, number | null | undefined, number | null>;
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
export interface RecallMessageTable {
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
  /** Where it may be seen, as one indexed word (message-index.ts placeWord); '' only before 0008 filled it. */
  place: Generated<string>;
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
  /** Speaker key for facts; null for messages (their visibility comes from hermes_recall_message). */
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

/**
 * A view nothing is stored in: inserting a row starts a conversation's first session in one
 * statement (session-schema.ts). `joined` 1 also marks the conversation joined.
 */
export interface SessionStartView {
  id: string;
  conversation_key: string;
  created_at: number;
  joined: number;
}

/**
 * SQLite only: a view nothing is stored in; inserting a row accepts a message in one statement,
 * its dedupe mark, the receipt settled and the work row (inbox-schema.ts). `receipt_id` and
 * `work_id` may be null (no receipt to settle, no work to queue).
 */
export interface AcceptView {
  platform: string;
  id: string;
  outcome: string;
  accepted_at: number;
  receipt_id: string | null;
  done_at: number | null;
  work_id: string | null;
  kind: string | null;
  lane: string | null;
  order_key: string | null;
  due_at: number | null;
  payload: string | null;
  created_at: number | null;
  /** A lone instance writes a row it will run at once already claimed; null = waiting. */
  claimed_by: string | null;
  claimed_until: number | null;
  attempts: number | null;
}

/** One history message: `seq` counts from 0 within its session; `body` is the message as JSON. */
export interface MessageTable {
  session_id: string;
  seq: number;
  body: string;
  /**
   * The message's search row, opaque JSON built by the recall module (message-index.ts), written
   * by the append and emptied by schema step 0013's trigger, which stores it in
   * hermes_recall_message in the same statement: always NULL when read.
   */
  search_row: ColumnType<null, string | null | undefined, never>;
  /**
   * The token charge of the model call whose outcome this row is (opaque JSON built by the usage
   * meter), added to `hermes_usage` by schema step 0015's trigger in the same statement and
   * emptied: always NULL when read.
   */
  charge: ColumnType<null, string | null | undefined, never>;
}

/**
 * A reminder (src/state/reminders): `status` and `due_at` are columns (the per-user listing and
 * limit are indexed queries); the whole record is JSON in `record`. Its firing is the hermes_work
 * row `reminder:<id>` (due_at = the reminder's), written in the transaction that created it.
 */
export interface ReminderTable {
  id: string;
  /** speakerKey of the creator: list, cancel and the per-user limit match on it. */
  owner_key: string;
  /** 'scheduled' | 'firing' | 'fired' | 'cancelled' | 'failed'. */
  status: string;
  due_at: number;
  created_at: number;
  record: string;
}

/**
 * A scheduled task (src/state/schedules). Its next run is the hermes_work row
 * `schedule:<id>@<due>`; the run that claims one due time writes the row of the next in the same
 * transaction that moves `next_due_at`, so exactly one row per schedule waits at any time.
 */
export interface ScheduleTable {
  id: string;
  owner_key: string;
  /** 'active' | 'finished' | 'cancelled' | 'stopped'. */
  status: string;
  /** The due time the waiting work row is for; null once nothing is left to run. */
  next_due_at: number | null;
  created_at: number;
  record: string;
}

/** A turn waiting on an approval decision: its state (TurnState as JSON), read when it resumes. */
export interface PausedTurnTable {
  turn_id: string;
  session_id: string;
  state: string;
  paused_at: number;
}

/** A message of a joined thread that was not for the bot (ContextMessage as JSON), until its next turn there. */
export interface NotedMessageTable {
  /** conversationKey of the thread. */
  conversation: string;
  /** The platform's message id. */
  id: string;
  /** When it was posted (the platform's time): the newest `limit` are kept. */
  at: number;
  body: string;
}

/** Tokens counted per UTC day: a person's ('person', subject = platform:userId) or a shared budget's ('pool', subject = its key). */
export interface UsageTable {
  /** YYYY-MM-DD (UTC); rows of days past are swept by it. */
  day: string;
  kind: string;
  subject: string;
  tokens: number;
}

/** A notice given at most once per interval: the row says not again before `until` (indexed, swept). */
export interface NoticeTable {
  key: string;
  until: number;
}

/** HERMES_USER_RATE's bucket per person: when it is full again; rows past `full_at` are swept. */
export interface RateTable {
  person: string;
  full_at: number;
}

/** A person's roles as last seen on an event (a sorted JSON array), for checks without one. */
export interface PersonRolesTable {
  person: string;
  roles: string;
  seen_at: number;
}

/** A Slack assistant thread the app was told of; swept by `started_at` after 30 days. */
export interface AssistantThreadTable {
  channel_id: string;
  thread_ts: string;
  /** 1 once its first request titled it. */
  titled: number;
  started_at: number;
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
  hermes_session_start: SessionStartView;
  hermes_message: MessageTable;
  hermes_accept: AcceptView;
  hermes_recall_message: RecallMessageTable;
  hermes_recall_member: RecallMemberTable;
  hermes_embedding: EmbeddingTable;
  hermes_channel_note: ChannelNoteTable;
  hermes_reminder: ReminderTable;
  hermes_schedule: ScheduleTable;
  hermes_paused_turn: PausedTurnTable;
  hermes_noted_message: NotedMessageTable;
  hermes_usage: UsageTable;
  hermes_notice: NoticeTable;
  hermes_rate: RateTable;
  hermes_person_roles: PersonRolesTable;
  hermes_assistant_thread: AssistantThreadTable;
}
