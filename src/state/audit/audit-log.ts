import { randomBytes } from 'node:crypto';
import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import type { OpenedDatabase } from '../store/database.js';
import type { AuditTable } from '../store/db-schema.js';
import { hashArgs } from '../approvals/approval-store.js';

/**
 * The audit record: who did or was refused what, where, and when, for the operator to read later
 * (`/dashboard/audit`). One row per event in `hermes_audit`, the same on SQLite and PostgreSQL.
 *
 * Invariants:
 * - append-only: there is no update, and the only delete is `prune` (HERMES_AUDIT_DAYS retention);
 * - `record` never throws: an audit write that fails is logged as an error and the action it
 *   describes goes on (a full disk must not stop someone's `/hermes stop`);
 * - arguments are never stored, only their hash (the approval record's canonical-JSON sha256), so
 *   the audit holds no more of a person's data than the approval prompt showed;
 * - `detail` passes through the trace redactor, so a configured secret never lands here.
 */

/** Every kind of event, in the order the dashboard's filter lists them. */
export const AUDIT_KINDS = [
  /** An approval decided: approved / denied / expired / cancelled, or a click refused (`refused`). */
  'approval',
  /** Someone HERMES_ALLOW (or a channel policy) does not admit. */
  'access_refused',
  /** A rate, daily-token or budget limit said no. */
  'limit_refused',
  /** A tool call refused by a channel policy. */
  'tool_refused',
  /** `/hermes stop` or the Stop button. */
  'stop',
  /** A `/hermes` command that changes something (new, forget, unschedule, policy…). */
  'admin_command',
  /** A scheduled task created or cancelled. */
  'schedule',
  /** An MCP server's or skill's pin changed. */
  'mcp_pin',
  /** The config hash at start, and each reload (accepted or rejected). */
  'config',
] as const;

export type AuditKind = (typeof AUDIT_KINDS)[number];

export function isAuditKind(value: string): value is AuditKind {
  return (AUDIT_KINDS as readonly string[]).includes(value);
}

/** One event as a caller describes it. */
export interface AuditEvent {
  kind: AuditKind;
  /** What happened: `approved`, `not_allowed`, `created`, `start`… (short, machine-readable). */
  outcome: string;
  /** The person who acted or was refused; absent for the bot itself (an expiry, a start). */
  actor?: Pick<Speaker, 'platform' | 'userId'>;
  /** Where it happened. */
  conversation?: Pick<Conversation, 'platform' | 'channelId'>;
  tool?: string;
  /** The tool call's arguments: stored as their hash only. */
  args?: unknown;
  /** The hash when the caller already has it (an approval record's `argsHash`). */
  argsHash?: string;
  /** Anything else worth reading later; kept small (see MAX_DETAIL_CHARS). */
  detail?: Record<string, unknown>;
}

/** One stored event as the dashboard reads it. */
export interface AuditEntry {
  id: string;
  at: number;
  kind: string;
  actor: string | null;
  channel: string | null;
  tool: string | null;
  argsHash: string | null;
  outcome: string;
  detail: Record<string, unknown>;
}

export interface AuditFilter {
  kind?: AuditKind;
  /** `platform:userId`, exactly. */
  actor?: string;
  /** `platform:channelId`, exactly. */
  channel?: string;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** How many rows match the filter in all. */
  total: number;
}

export interface AuditLog {
  record(event: AuditEvent): Promise<void>;
  /** Newest first. `limit` is capped at MAX_PAGE. */
  list(filter: AuditFilter, page: { limit: number; offset: number }): Promise<AuditPage>;
  /** Deletes rows older than `before` (epoch ms) in bounded batches; returns how many went. */
  prune(before: number): Promise<number>;
}

export const MAX_PAGE = 1_000;
const MAX_DETAIL_CHARS = 4_000;
const MAX_FIELD_CHARS = 200;
const PRUNE_BATCH = 5_000;
const MAX_PRUNE_BATCHES = 200;

export interface AuditLogDeps {
  database: OpenedDatabase;
  clock: Clock;
  log: Logger;
  /** The trace redactor (value → JSON text with secrets removed); absent → plain JSON. */
  redact?: (value: unknown) => string;
}

/** `platform:userId`, the form HERMES_ADMINS and the gatekeeper use. */
export function auditActor(s: Pick<Speaker, 'platform' | 'userId'>): string {
  return `${s.platform}:${s.userId}`;
}

export function auditChannel(c: Pick<Conversation, 'platform' | 'channelId'>): string {
  return `${c.platform}:${c.channelId}`;
}

const clip = (text: string, max = MAX_FIELD_CHARS) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * Fixed-width base-36 time first, then a per-process sequence, so ids sort as the events happened:
 * two events of one process in the same millisecond keep their order; ties between instances are
 * broken by the random tail.
 */
function idMaker(): (at: number) => string {
  let seq = 0;
  return (at) => `${Math.max(0, Math.floor(at)).toString(36).padStart(10, '0')}-${(seq++ % 36 ** 6).toString(36).padStart(6, '0')}-${randomBytes(4).toString('hex')}`;
}

function parseDetail(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { text };
  }
}

export function createAuditLog(deps: AuditLogDeps): AuditLog {
  const { database, clock, log } = deps;
  const db = database.db;
  const toJson = deps.redact ?? ((v: unknown) => JSON.stringify(v) ?? 'null');
  const newId = idMaker();

  function rowOf(event: AuditEvent): AuditTable {
    const at = clock.now();
    let detail = toJson(event.detail ?? {});
    if (detail.length > MAX_DETAIL_CHARS) detail = toJson({ truncated: true, text: detail.slice(0, MAX_DETAIL_CHARS) });
    const argsHash = event.argsHash ?? (event.args !== undefined ? hashArgs(event.args) : null);
    return {
      id: newId(at),
      at,
      kind: event.kind,
      actor: event.actor ? clip(auditActor(event.actor)) : null,
      channel: event.conversation ? clip(auditChannel(event.conversation)) : null,
      tool: event.tool !== undefined ? clip(event.tool) : null,
      args_hash: argsHash,
      outcome: clip(event.outcome),
      detail,
    };
  }

  function filtered(filter: AuditFilter) {
    let q = db.selectFrom('hermes_audit');
    if (filter.kind !== undefined) q = q.where('kind', '=', filter.kind);
    if (filter.actor !== undefined) q = q.where('actor', '=', filter.actor);
    if (filter.channel !== undefined) q = q.where('channel', '=', filter.channel);
    if (filter.from !== undefined) q = q.where('at', '>=', filter.from);
    if (filter.to !== undefined) q = q.where('at', '<', filter.to);
    return q;
  }

  return {
    async record(event) {
      try {
        await db.insertInto('hermes_audit').values(rowOf(event)).execute();
      } catch (err) {
        log.error({ err: (err as Error).message, kind: event.kind, outcome: event.outcome }, 'audit: could not record an event');
      }
    },

    async list(filter, page) {
      const limit = Math.max(1, Math.min(MAX_PAGE, Math.floor(page.limit)));
      const offset = Math.max(0, Math.floor(page.offset));
      const rows = await filtered(filter).selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
      const counted = await filtered(filter).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
      return {
        total: Number(counted?.n ?? 0),
        entries: rows.map((r) => ({ id: r.id, at: r.at, kind: r.kind, actor: r.actor, channel: r.channel, tool: r.tool, argsHash: r.args_hash, outcome: r.outcome, detail: parseDetail(r.detail) })),
      };
    },

    async prune(before) {
      let removed = 0;
      for (let i = 0; i < MAX_PRUNE_BATCHES; i++) {
        const batch = db.selectFrom('hermes_audit').select('id').where('at', '<', before).orderBy('at').limit(PRUNE_BATCH);
        const res = await db.deleteFrom('hermes_audit').where('id', 'in', batch).executeTakeFirst();
        const n = Number(res.numDeletedRows);
        removed += n;
        if (n < PRUNE_BATCH) break;
      }
      return removed;
    },
  };
}
