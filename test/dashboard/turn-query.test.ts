import { describe, expect, it } from 'vitest';
import type { TurnSummary } from '../../src/operations/dashboard/turn-summaries.js';
import { computeStats, pageOf, parseFilter } from '../../src/operations/dashboard/turn-query.js';

/** The numbers and filters behind the turns and stats pages, as pure functions over summaries. */

const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T00:00:00Z');

function turn(i: number, over: Partial<TurnSummary> = {}): TurnSummary {
  return {
    turnId: `t${i}`, startedAt: T0 + i * 3600_000, platform: 'slack', userKey: 'slack:T1:U1', sessionId: 's', text: `q${i}`, search: `q${i}`,
    outcome: 'answered', steps: 1, promptTokens: 100, completionTokens: 10, modelCalls: 1, toolCalls: [], approvals: 0, subagents: [], lines: [], ...over,
  };
}

describe('turn statistics', () => {
  it('gives per tool calls, success rate, nearest-rank p50 and p95, and failures by kind', () => {
    // 20 calls of 1..20 ms, two of them failed.
    const calls = Array.from({ length: 20 }, (_, k) => ({ name: 'web_search', ok: k !== 3 && k !== 7, durationMs: k + 1, ...(k === 3 && { errorKind: 'timeout' }) }));
    const s = computeStats([turn(0, { toolCalls: calls }), turn(1, { toolCalls: [{ name: 'calculator', ok: true, durationMs: 2 }] })], [], T0, T0 + DAY - 1);
    expect(s.tools).toEqual([
      { name: 'web_search', calls: 20, ok: 18, successRate: 0.9, p50Ms: 11, p95Ms: 20, errorKinds: { timeout: 1, failed: 1 } },
      { name: 'calculator', calls: 1, ok: 1, successRate: 1, p50Ms: 2, p95Ms: 2, errorKinds: {} },
    ]);
  });

  it('counts outcomes and tokens per UTC day, every day of the window listed, unfinished turns included', () => {
    const turns = [turn(1), turn(2, { outcome: 'max_steps' }), turn(30, { promptTokens: 7, completionTokens: 3 }), turn(31, { outcome: undefined }), turn(24 * 9)];
    const s = computeStats(turns, [{ at: T0 + 5, reason: 'rate', platform: 'slack' }], T0, T0 + 3 * DAY - 1);
    expect(s.turns).toBe(4);
    expect(s.outcomes).toEqual(['answered', 'max_steps', 'unfinished']);
    expect(s.days).toEqual([
      { day: '2026-03-01', outcomes: { answered: 1, max_steps: 1 }, promptTokens: 200, completionTokens: 20 },
      { day: '2026-03-02', outcomes: { answered: 1, unfinished: 1 }, promptTokens: 107, completionTokens: 13 },
      { day: '2026-03-03', outcomes: {}, promptTokens: 0, completionTokens: 0 },
    ]);
    expect(s.refusals).toEqual({ rate: 1 });
  });
});

describe('turn filters and pages', () => {
  it('reads only the known filters from the query, trimmed and bounded', () => {
    expect(parseFilter(new URLSearchParams(`platform= slack &user=U1&outcome=&tool=x&text=${'a'.repeat(500)}&evil=1`))).toEqual({ platform: 'slack', user: 'U1', tool: 'x', text: 'a'.repeat(200) });
  });

  it('combines filters and clamps the page number into range', () => {
    const turns = Array.from({ length: 7 }, (_, i) => turn(7 - i, { platform: i % 2 ? 'discord' : 'slack', toolCalls: i < 3 ? [{ name: 'calculator', ok: true, durationMs: 1 }] : [], search: i === 5 ? 'the purple elephant' : 'x' }));
    expect(pageOf(turns, { platform: 'slack', tool: 'calculator' }, 1).turns.map((t) => t.turnId)).toEqual(['t7', 't5']);
    expect(pageOf(turns, { text: 'PURPLE' }, 1).total).toBe(1);
    expect(pageOf(turns, { outcome: 'unfinished' }, 1).total).toBe(0);
    const p = pageOf(turns, {}, 99, 3);
    expect(p).toMatchObject({ total: 7, page: 3, pages: 3 });
    expect(p.turns.map((t) => t.turnId)).toEqual(['t1']);
    expect(pageOf(turns, {}, Number.NaN, 3).page).toBe(1);
  });
});
