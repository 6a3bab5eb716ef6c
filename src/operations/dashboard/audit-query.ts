import { AUDIT_KINDS, isAuditKind, type AuditFilter } from '../../state/audit/audit-log.js';

/**
 * The audit page's filters from its query string. Every value is checked here and reaches the
 * database only as a bound parameter: `kind` must be a known kind, `actor` and `channel` are
 * matched exactly (no wildcards), dates are whole UTC days. A value that does not parse is
 * dropped and named in `problems`, never passed on.
 */
export interface AuditQuery {
  filter: AuditFilter;
  /** The dates as typed (YYYY-MM-DD), to fill the form again. */
  fromDay?: string;
  toDay?: string;
  page: number;
  problems: string[];
}

export const AUDIT_PAGE_SIZE = 50;
/** Deeper pages are refused: narrow the filter or download the CSV instead. */
export const MAX_AUDIT_PAGE = 2_000;
const MAX_ID_CHARS = 200;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

function dayStart(day: string): number | undefined {
  if (!DAY.test(day)) return undefined;
  const t = Date.parse(`${day}T00:00:00Z`);
  // Date.parse rolls 2026-02-31 over to March: only a day that reads back the same is one.
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === day ? t : undefined;
}

export function parseAuditQuery(params: URLSearchParams): AuditQuery {
  const problems: string[] = [];
  const filter: AuditFilter = {};
  const kind = params.get('kind')?.trim() ?? '';
  if (kind !== '') {
    if (isAuditKind(kind)) filter.kind = kind;
    else problems.push(`Unknown kind ignored; the kinds are ${AUDIT_KINDS.join(', ')}.`);
  }
  for (const field of ['actor', 'channel'] as const) {
    const v = params.get(field)?.trim() ?? '';
    if (v === '') continue;
    if (v.length > MAX_ID_CHARS) problems.push(`The ${field} filter is longer than ${MAX_ID_CHARS} characters and was ignored.`);
    else filter[field] = v;
  }
  const out: AuditQuery = { filter, page: 1, problems };
  const from = params.get('from')?.trim() ?? '';
  if (from !== '') {
    const t = dayStart(from);
    if (t === undefined) problems.push('The "from" date is not a date (YYYY-MM-DD) and was ignored.');
    else {
      filter.from = t;
      out.fromDay = from;
    }
  }
  const to = params.get('to')?.trim() ?? '';
  if (to !== '') {
    const t = dayStart(to);
    if (t === undefined) problems.push('The "to" date is not a date (YYYY-MM-DD) and was ignored.');
    else {
      // "to" names the last day shown, so the range ends when the next day begins.
      filter.to = t + 86_400_000;
      out.toDay = to;
    }
  }
  const page = Number(params.get('page') ?? 1);
  out.page = Number.isInteger(page) && page >= 1 ? Math.min(page, MAX_AUDIT_PAGE) : 1;
  return out;
}

/** The query string for the same filters (and a page), for links and the CSV download. */
export function auditQueryString(q: Pick<AuditQuery, 'filter' | 'fromDay' | 'toDay'>, page?: number): string {
  const p = new URLSearchParams();
  if (q.filter.kind) p.set('kind', q.filter.kind);
  if (q.filter.actor) p.set('actor', q.filter.actor);
  if (q.filter.channel) p.set('channel', q.filter.channel);
  if (q.fromDay) p.set('from', q.fromDay);
  if (q.toDay) p.set('to', q.toDay);
  if (page !== undefined && page > 1) p.set('page', String(page));
  const s = p.toString();
  return s ? `?${s}` : '';
}
