import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../../basics/canonical-json.js';
import type { Clock } from '../../basics/clock.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import { storeKey, type Store } from '../store/store.js';

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
  /** Compare-and-set from 'pending' only: exactly one caller gets applied:true, ever (double clicks, two approvers, after restart). */
  decide(id: string, to: 'approved' | 'denied' | 'expired' | 'cancelled', by?: Speaker): Promise<{ applied: boolean; record: ApprovalRecord | undefined }>;
  /** 'approved' → 'running' (CAS) before the side effect; false if it is not 'approved' (already ran, running, or tampered). */
  markRunning(id: string): Promise<boolean>;
  /** 'running' → 'done'; does nothing from any other status. */
  markDone(id: string, resultSummary: string): Promise<void>;
  /** 'running' → 'unknown', for a run a restart interrupted; does nothing from any other status. */
  markUnknown(id: string): Promise<void>;
  /** pending, approved-not-yet-run and running records, oldest first, read through an index key. */
  listOpen(): Promise<ApprovalRecord[]>;
  openForSession(sessionId: string): Promise<ApprovalRecord[]>;
}

const OPEN_STATUSES: ReadonlySet<ApprovalStatus> = new Set(['pending', 'approved', 'running']);
const OPEN_INDEX_KEY = storeKey('approval', 'open');
const recordKey = (id: string) => storeKey('approval', 'record', id);

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

export function createApprovalStore(store: Store, clock: Clock): ApprovalStore {
  /** Compare-and-set on one record: `change` returns the new record, or undefined to refuse. */
  async function transition(id: string, change: (r: ApprovalRecord) => ApprovalRecord | undefined) {
    let applied = false;
    const { after } = await store.update<ApprovalRecord>(recordKey(id), (current) => {
      if (!current || isTampered(current)) return undefined;
      const next = change(current);
      if (next) applied = true;
      return next;
    });
    if (applied && after && !OPEN_STATUSES.has(after.status)) await removeFromIndex([id]);
    return { applied, record: after ? present(after) : undefined };
  }

  async function removeFromIndex(ids: string[]): Promise<void> {
    const gone = new Set(ids);
    await store.update<string[]>(OPEN_INDEX_KEY, (list) => (list?.some((x) => gone.has(x)) ? list.filter((x) => !gone.has(x)) : undefined));
  }

  async function listOpen(): Promise<ApprovalRecord[]> {
    const ids = (await store.get<string[]>(OPEN_INDEX_KEY)) ?? [];
    const records = await Promise.all(ids.map((id) => store.get<ApprovalRecord>(recordKey(id))));
    const open: ApprovalRecord[] = [];
    const stale: string[] = [];
    records.forEach((r, i) => {
      if (r && OPEN_STATUSES.has(r.status)) open.push(present(r));
      else stale.push(ids[i]!);
    });
    // A closed record's id is left over from a crash between the status write and the index write.
    if (stale.length) await removeFromIndex(stale);
    return open.sort((a, b) => a.createdAt - b.createdAt);
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
      // Record first, so an indexed id always has a record and listOpen never prunes one that is
      // being created. A crash in between leaves an unindexed record that was never shown to
      // anyone; the turn's repair step then tells the model the call was interrupted.
      await store.set(recordKey(record.id), record);
      await store.update<string[]>(OPEN_INDEX_KEY, (list) => [...(list ?? []), record.id]);
      return present(record);
    },

    async get(id) {
      const r = await store.get<ApprovalRecord>(recordKey(id));
      return r ? present(r) : undefined;
    },

    async setMessageRef(id, ref) {
      const { after } = await store.update<ApprovalRecord>(recordKey(id), (r) => (r ? { ...r, messageRef: ref } : undefined));
      if (!after) throw new Error(`approval ${id} does not exist, so its message reference cannot be stored`);
    },

    decide(id, to, by) {
      return transition(id, (r) =>
        r.status === 'pending' ? { ...r, status: to, decidedAt: clock.now(), ...(by ? { decidedBy: by } : {}) } : undefined,
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

    listOpen,

    async openForSession(sessionId) {
      return (await listOpen()).filter((r) => r.sessionId === sessionId);
    },
  };
}
