import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { isSummaryRecord, SUMMARY_RECORDS, type SummaryType } from '../../src/operations/dashboard/summary-records.js';
import { approvalRecord, refusalRecord, subagentRecord, toolCallRecord, turnEndRecord, turnStartRecord } from '../../src/runtime/trace/trace-schema.js';

/**
 * The index checks the records it summarises by hand (a zod parse per line was a third of a cold
 * build); these checks must accept exactly what trace-schema.ts accepts. Every key of each schema
 * is dropped and given every kind of wrong value, and both must agree each time; a key added to a
 * schema and not to SUMMARY_RECORDS fails the first check.
 */

const SCHEMAS: Record<SummaryType, z.ZodObject> = {
  turn_start: turnStartRecord,
  tool_call: toolCallRecord,
  subagent: subagentRecord,
  approval: approvalRecord,
  turn_end: turnEndRecord,
  refusal: refusalRecord,
};

const VALID: Record<SummaryType, Record<string, unknown>> = {
  turn_start: { ts: '2026-12-01T09:00:00.000Z', type: 'turn_start', turnId: 't1', sessionId: 's1', platform: 'slack', userKey: 'slack:T1:U1', text: 'hi' },
  tool_call: { ts: '2026-12-01T09:00:00.000Z', type: 'tool_call', turnId: 't1', callId: 'c1', name: 'calculator', args: { expression: '1+1' }, ok: true, result: '2', raw: 2, startedAt: 5, durationMs: 3, errorKind: 'execution', agent: 'researcher', parentCallId: 'c0' },
  subagent: { ts: '2026-12-01T09:00:00.000Z', type: 'subagent', turnId: 't1', callId: 'c1', agent: 'researcher', outcome: 'answered', steps: 2, durationMs: 10.5, promptTokens: 100, completionTokens: 10 },
  approval: { ts: '2026-12-01T09:00:00.000Z', type: 'approval', turnId: 't1', approvalId: 'a1', tool: 'run_code', status: 'pending', by: 'U2' },
  turn_end: { ts: '2026-12-01T09:00:00.000Z', type: 'turn_end', turnId: 't1', outcome: 'answered', steps: 2, durationMs: 100, promptTokens: 220, completionTokens: 18 },
  refusal: { ts: '2026-12-01T09:00:00.000Z', type: 'refusal', turnId: 't1', reason: 'rate', source: 'message', platform: 'slack', userKey: 'slack:T1:U9' },
};

const WRONG: unknown[] = [undefined, null, '', 'x', 0, -1, 1.5, -0.5, 2 ** 53, 1e300, true, false, {}, [], ['x'], { a: 1 }];

describe('the index’s checks of the records it summarises', () => {
  for (const type of Object.keys(SCHEMAS) as SummaryType[]) {
    const schema = SCHEMAS[type];
    it(`${type}: the same keys as trace-schema.ts, and the same verdict on every wrong value`, () => {
      expect(Object.keys(SUMMARY_RECORDS[type]).sort()).toEqual(Object.keys(schema.shape).sort());
      expect(isSummaryRecord(type, VALID[type]!)).toBe(true);
      expect(schema.safeParse(VALID[type]).success).toBe(true);
      let disagreements: string[] = [];
      let rejected = 0;
      for (const key of Object.keys(schema.shape)) {
        const { [key]: _dropped, ...without } = VALID[type]!;
        const variants: Array<[string, Record<string, unknown>]> = [[`${key} missing`, without], ...WRONG.map((v): [string, Record<string, unknown>] => [`${key}=${JSON.stringify(v)}`, { ...VALID[type], [key]: v }])];
        for (const [what, record] of variants) {
          const expected = schema.safeParse(record).success;
          if (!expected) rejected++;
          if (isSummaryRecord(type, record) !== expected) disagreements.push(`${what}: schema ${expected ? 'accepts' : 'rejects'}`);
        }
      }
      expect(disagreements).toEqual([]);
      // The variants do exercise rejections (a schema that accepted everything would make this moot).
      expect(rejected).toBeGreaterThan(Object.keys(schema.shape).length);
      disagreements = [];
      // Another type's record is not this type's.
      for (const other of Object.keys(VALID) as SummaryType[]) if (other !== type && isSummaryRecord(type, VALID[other]!)) disagreements.push(other);
      expect(disagreements).toEqual([]);
    });
  }
});
