import type { TraceRecordOf } from '../../runtime/trace/trace-schema.js';

/**
 * The records the summary reads, and the checks of trace-schema.ts's types for them, written out:
 * a zod parse per line (and the copy of the record it returns) was a third of a cold index build.
 * test/dashboard/summary-records.test.ts holds these to the schema, key by key, so they cannot
 * drift apart.
 */
type Check = 'string' | 'string?' | 'boolean' | 'count' | 'ms' | 'number?' | 'present' | 'any?';
export const SUMMARY_RECORDS = {
  turn_start: { type: 'string', turnId: 'string', sessionId: 'string', platform: 'string', userKey: 'string', text: 'string' },
  tool_call: { type: 'string', turnId: 'string', callId: 'string', name: 'string', args: 'present', ok: 'boolean', result: 'string', raw: 'any?', startedAt: 'number?', durationMs: 'ms', errorKind: 'string?', agent: 'string?', parentCallId: 'string?' },
  subagent: { type: 'string', turnId: 'string', callId: 'string', agent: 'string', outcome: 'string', steps: 'count', durationMs: 'ms', promptTokens: 'count', completionTokens: 'count' },
  approval: { type: 'string', turnId: 'string', approvalId: 'string', tool: 'string', status: 'string', by: 'string?' },
  turn_end: { type: 'string', turnId: 'string', outcome: 'string', steps: 'count', durationMs: 'ms', promptTokens: 'count', completionTokens: 'count' },
  refusal: { type: 'string', turnId: 'string?', reason: 'string', source: 'string', platform: 'string', userKey: 'string' },
} as const satisfies Record<string, Record<string, Check>>;
export type SummaryType = keyof typeof SUMMARY_RECORDS;

function passes(v: unknown, check: Check, present: boolean): boolean {
  switch (check) {
    case 'string':
      return typeof v === 'string';
    case 'string?':
      return v === undefined || typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'count':
      return Number.isSafeInteger(v) && (v as number) >= 0;
    case 'ms':
      return typeof v === 'number' && Number.isFinite(v) && v >= 0;
    case 'number?':
      return v === undefined || (typeof v === 'number' && Number.isFinite(v));
    case 'present':
      return present;
    case 'any?':
      return true;
  }
}

/** Whether `raw` (a `type` record, parsed JSON) is a record of that type as trace-schema.ts defines it. */
export function isSummaryRecord<T extends SummaryType>(type: T, raw: Record<string, unknown>): raw is TraceRecordOf<T> & Record<string, unknown> {
  if (raw.type !== type) return false;
  const checks: Record<string, Check> = SUMMARY_RECORDS[type];
  for (const key in checks) if (!passes(raw[key], checks[key]!, key in raw)) return false;
  return true;
}
