import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../../basics/canonical-json.js';
import type { Clock } from '../../basics/clock.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import type { OpenedDatabase, Tx } from '../store/database.js';

/**
 * pending → approved | denied | expired | cancelled   (decide: compare-and-set from pending)
 * approved → running                                   (markRunning: just before the side effect)
 * running → done                                       (markDone: after it)
 * running → unknown                                    (markUnknown: a restart found it mid-run;
 *                                                        it is never re-run, the user is told)
 */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled' | 'running' | 'done' | 'unknown';

export interface ApprovalRecord {
  /** Random, unguessable: the buttons carry only this. */
  id: string;
  sessionId: string;
  conversation: Conversation;
  replyTo?: string;
  turnId: string;
  toolCallId: string;
  toolName: string;
  /** The exact arguments the tool will run with once approved. */
  args: unknown;
  /** sha256 of the canonical JSON of `args`, checked on every read. */
  argsHash: string;
  requester: Speaker;
  /** Outside sources the turn had read before this request (URLs, "thread context", file names), for the prompt. */
  sources?: string[];
  /** The tool's own words about this call (describeCall), shown above the arguments. */
  description?: string;
  createdAt: number;
  expiresAt: number;
  status: ApprovalStatus;
  decidedBy?: Speaker;
  decidedAt?: number;
  messageRef?: string;
  resultSummary?: string;
  /** Set on read when the stored args no longer match argsHash; such a record is never decided or run. */
  tampered?: boolean;
}

export type NewApproval = Omit<ApprovalRecord, 'id' | 'argsHash' | 'createdAt' | 'status' | 'tampered'>;

export interface ApprovalStore {
  /** Stores a pending record; call it BEFORE anything is shown to anyone. */
  create(input: NewApproval): Promise<ApprovalRecord>;
  get(id: string): Promise<ApprovalRecord | undefined>;
  setMessageRef(id: string, ref: string): Promise<void>;
  /**
   * Compare-and-set from 'pending' only: exactly one caller gets applied:true, ever (double clicks,
   * two approvers, after restart). `then` runs inside the same transaction when it applies (the
   * resume work row), so the decision and what it sets off commit together or not at all; it
   * must hold only statements on `tx`.
   */
  decide(id: string, to: 'approved' | 'denied' | 'expired' | 'cancelled', by?: Speaker, then?: (tx: Tx, record: ApprovalRecord) => Promise<void>): Promise<{ applied: boolean; record: ApprovalRecord | undefined }>;
  /** 'approved' → 'running' (CAS) before the side effect; false if it is not 'approved' (already ran, running, or tampered). */
  markRunning(id: string): Promise<boolean>;
  /** 'running' → 'done'; does nothing from any other status. */
  markDone(id: string, resultSummary: string): Promise<void>;
  /** 'running' → 'unknown', for a run a restart interrupted; does nothing from any other status. */
  markUnknown(id: string): Promise<void>;
  /** pending, approved-not-yet-run and running records, oldest first (an indexed query on status). */
  listOpen(): Promise<ApprovalRecord[]>;
  openForSession(sessionId: string): Promise<ApprovalRecord[]>;
  /** Every record of a session, decided ones too, oldest first (crash recovery: what became of a turn's requests). */
  ofSession(sessionId: string): Promise<ApprovalRecord[]>;
}

const OPEN_STATUSES: readonly ApprovalStatus[] = ['pending', 'approved', 'running'];

/** Kept here too: the hash's definition is read next to the records it protects. */
export { canonicalJson };

export function hashArgs(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

function isTampered(r: ApprovalRecord): boolean {
  return hashArgs(r.args) !== r.argsHash;
}

/** What callers see: the stored record, flagged if its arguments were changed behind our back. */
function present(r: ApprovalRecord): ApprovalRecord {
  const { tampered: _ignored, ...clean } = r;
  return isTampered(clean) ? { ...clean, tampered: true } : clean;
}

/** A record as written to the table: the status lives in its column, `tampered` is never stored. */
function recordJson(r: ApprovalRecord): string {
  const { tampered: _t, status: _s, ...rest } = r;
  return JSON.stringify(rest);
}

function fromRow(row: { status: string; record: string }): ApprovalRecord {
  return { ...(JSON.parse(row.record) as Omit<ApprovalRecord, 'status'>), status: row.status as ApprovalStatus };
}

/**
 * Approval requests in `hermes_approval` (db-schema.ts): one row each, the status a column every
 * change compares and sets, open requests found by an indexed query. Each change is one
 * transaction; on PostgreSQL the row is locked while it is read and rewritten, so a change of
 * another field (the prompt's reference) never overwrites a decision or the other way round.
 */
export function createApprovalStore(database: OpenedDatabase, clock: Clock): ApprovalStore {
  const { db } = database;
  const pg = database.dialect === 'postgres';

  async function transition(
    id: string,
    change: (r: ApprovalRecord) => ApprovalRecord | undefined,
    then?: (tx: Tx, record: ApprovalRecord) => Promise<void>,
  ): Promise<{ applied: boolean; record: ApprovalRecord | undefined }> {
    return db.transaction().execute(async (tx) => {
      const row = await tx
        .selectFrom('hermes_approval')
        .select(['status', 'record'])
        .where('id', '=', id)
        .$if(pg, (q) => q.forUpdate())
        .executeTakeFirst();
      if (!row) return { applied: false, record: undefined };
      const current = fromRow(row);
      const next = isTampered(current) ? undefined : change(current);
      if (!next) return { applied: false, record: present(current) };
      const r = await tx
        .updateTable('hermes_approval')
        .set({ status: next.status, record: recordJson(next) })
        .where('id', '=', id)
        .where('status', '=', current.status)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return { applied: false, record: present(current) };
      const after = present(next);
      if (then) await then(tx, after);
      return { applied: true, record: after };
    });
  }

  async function listWhere(sessionId?: string, anyStatus = false): Promise<ApprovalRecord[]> {
    const rows = await db
      .selectFrom('hermes_approval')
      .select(['status', 'record'])
      .$if(!anyStatus, (q) => q.where('status', 'in', OPEN_STATUSES))
      .$if(sessionId !== undefined, (q) => q.where('session_id', '=', sessionId!))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((row) => present(fromRow(row)));
  }

  return {
    async create(input) {
      const record: ApprovalRecord = {
        ...input,
        id: randomBytes(16).toString('base64url'),
        argsHash: hashArgs(input.args),
        createdAt: clock.now(),
        status: 'pending',
      };
      await db
        .insertInto('hermes_approval')
        .values({ id: record.id, session_id: record.sessionId, status: record.status, expires_at: record.expiresAt, created_at: record.createdAt, record: recordJson(record) })
        .execute();
      return present(record);
    },

    async get(id) {
      const row = await db.selectFrom('hermes_approval').select(['status', 'record']).where('id', '=', id).executeTakeFirst();
      return row ? present(fromRow(row)) : undefined;
    },

    async setMessageRef(id, ref) {
      const { record } = await transition(id, (r) => ({ ...r, messageRef: ref }));
      if (!record) throw new Error(`approval ${id} does not exist, so its message reference cannot be stored`);
    },

    decide(id, to, by, then) {
      return transition(
        id,
        (r) => (r.status === 'pending' ? { ...r, status: to, decidedAt: clock.now(), ...(by ? { decidedBy: by } : {}) } : undefined),
        then,
      );
    },

    async markRunning(id) {
      return (await transition(id, (r) => (r.status === 'approved' ? { ...r, status: 'running' } : undefined))).applied;
    },

    async markDone(id, resultSummary) {
      await transition(id, (r) => (r.status === 'running' ? { ...r, status: 'done', resultSummary } : undefined));
    },

    async markUnknown(id) {
      await transition(id, (r) => (r.status === 'running' ? { ...r, status: 'unknown' } : undefined));
    },

    listOpen: () => listWhere(),
    openForSession: (sessionId) => listWhere(sessionId),
    ofSession: (sessionId) => listWhere(sessionId, true),
  };
}
