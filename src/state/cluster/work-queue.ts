import type { DbOrTx } from '../store/database.js';

/**
 * The one queue for every kind of work: a user's turn, an approval's resume, a reminder, a
 * scheduled run. Work is a row in `hermes_work` (db-schema.ts) written inside the transaction
 * that decided it (accepting a message, deciding a click), so a crash never leaves a decision
 * without its work or work without its decision. Two implementations share the worker loop
 * (work-loop.ts): in-process wake-ups on SQLite (local-work-queue.ts), and on PostgreSQL claims
 * with FOR UPDATE SKIP LOCKED plus LISTEN/NOTIFY between instances (pg-work-queue.ts). Callers
 * never know which one they have.
 *
 * Guarantees:
 * - rows of one lane run one at a time, in `order` order (the platform's posting order), on
 *   every instance; different lanes run in parallel up to `maxConcurrent`;
 * - a row runs when its `dueAt` has come (found with an index on the due time, not a list);
 * - a row is deleted when its job has ended; one whose runner died (kill -9, a stalled instance
 *   whose lease ran out) or was cut off (a shutdown mid-turn) is claimed again with
 *   `startedBefore`, and the job decides how to carry on without repeating side effects.
 */
export type WorkKind = 'turn' | 'resume' | 'reminder' | 'scheduled';

export interface WorkItem<J> {
  /** Unique per piece of work; adding an id already queued is a no-op (a replay, a double click). */
  id: string;
  kind: WorkKind;
  /** Rows of one lane run one at a time, in order (a conversation's session key). */
  lane: string;
  /** Fixed-width sortable text, see gateway/order-key.ts. */
  order: string;
  /** Epoch ms; absent = now. */
  dueAt?: number;
  job: J;
}

/** A platform delivery's receipt (`hermes_receipt`) to mark done in the statement that accepts its message. */
export interface ReceiptSettled {
  platform: string;
  id: string;
  doneAt: number;
}

export interface WorkContext {
  id: string;
  kind: WorkKind;
  lane: string;
  /** A runner claimed this row before and did not finish it. */
  startedBefore: boolean;
  /** Aborted when this instance lost the row's lease (it stalled) or is closing. */
  signal: AbortSignal;
}

/**
 * Runs one job. Returning 'interrupted' (the job was cut off by `signal` before it finished) keeps
 * the row for the next claim, which gets `startedBefore`; anything else, a throw included, means
 * the row is done and is deleted.
 */
export type WorkRunner<J> = (job: J, ctx: WorkContext) => Promise<void | 'interrupted'>;

export interface WorkQueue<J> {
  /**
   * Writes the row inside the caller's transaction. True when it was added, false when a row with
   * this id is already queued. Call wake(lane) once the transaction has committed. Rows enter the
   * table only through here (or before start): a lone instance learns its next due time from it.
   */
  addIn(tx: DbOrTx, item: WorkItem<J>): Promise<boolean>;
  /**
   * Optional (PostgreSQL): the message's dedupe mark (`hermes_inbound`, outcome 'queued') and, only
   * if the mark is new, the row, in one statement, so accepting costs no BEGIN and COMMIT round
   * trips. `receipt`: the delivery's receipt is marked done in the same statement (mark new or
   * not). Resolves whether the mark was new. Call wake(lane) after.
   */
  addMarked?(mark: { platform: string; id: string; acceptedAt: number }, item: WorkItem<J>, receipt?: ReceiptSettled): Promise<boolean>;
  /** Tells the workers (here and, on a shared database, elsewhere) that a lane has work. */
  wake(lane: string): void;
  /** addIn on its own transaction, then wake. */
  add(item: WorkItem<J>): Promise<boolean>;
  /** Starts claiming rows and running them with `run`; `onStop` hears stop requests for a lane held here. */
  start(run: WorkRunner<J>, onStop?: (lane: string) => void): Promise<void>;
  /** Asks the instance running the lane's current row, if it is another one, to stop it. True if one was asked. */
  stopElsewhere(lane: string): Promise<boolean>;
  /**
   * False only when no row of `lane` can be waiting unclaimed (a lone instance counts the rows it
   * added and claimed); true when one may be, so the caller looks. Lets a running turn skip looking
   * for messages that arrived meanwhile when none did.
   */
  mayHaveWaiting(lane: string): boolean;
  /** Rows of `lane` that were waiting were removed by their caller (steering took them in). */
  removedWaiting(lane: string, n: number): void;
  /** Rows running in this instance now. */
  active(): number;
  /** Resolves when this instance runs no row. */
  idle(): Promise<void>;
  /** Stops claiming; running jobs are aborted by their owners, their rows stay for the next claim. */
  close(): Promise<void>;
}
