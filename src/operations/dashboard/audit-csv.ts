import type { AuditEntry } from '../../state/audit/audit-log.js';

/**
 * The audit as CSV (RFC 4180: comma separated, CRLF line ends, a field with a comma, quote or line
 * break quoted and its quotes doubled). Audit cells hold text people chose (a schedule name, a
 * command argument), and a spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (or a
 * tab or carriage return before one) as a formula: such a cell gets a leading `'`, which shows
 * the text as written.
 */
export const AUDIT_CSV_COLUMNS = ['time_utc', 'kind', 'actor', 'channel', 'tool', 'args_hash', 'outcome', 'detail', 'id'] as const;

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: string | number | null | undefined): string {
  let s = value === null || value === undefined ? '' : String(value);
  if (FORMULA_START.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvRow(cells: ReadonlyArray<string | number | null | undefined>): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

export function auditCsvRow(e: AuditEntry, clean: (text: string) => string = (t) => t): string {
  const detail = Object.keys(e.detail).length ? JSON.stringify(e.detail) : '';
  return csvRow([new Date(e.at).toISOString(), e.kind, e.actor, e.channel, e.tool, e.argsHash, e.outcome, detail, e.id].map((v) => (typeof v === 'string' ? clean(v) : v)));
}
