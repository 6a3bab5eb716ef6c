import { describe, expect, it } from 'vitest';
import { formatStats, summarise } from '../../src/operations/stats/trace-stats.js';

describe('npm run stats per agent', () => {
  it('counts runs, answered share, tokens and duration per sub-agent from subagent records', () => {
    const s = summarise([
      { type: 'turn_end', turnId: 't1', outcome: 'answered', steps: 2, promptTokens: 3300, completionTokens: 160 },
      { type: 'subagent', turnId: 't1', agent: 'researcher', outcome: 'answered', durationMs: 100, promptTokens: 1000, completionTokens: 50 },
      { type: 'subagent', turnId: 't1', agent: 'researcher', outcome: 'step_limit', durationMs: 300, promptTokens: 2000, completionTokens: 100 },
      { type: 'subagent', turnId: 't1', agent: 'coder', outcome: 'answered', durationMs: 50, promptTokens: 10, completionTokens: 1 },
      { type: 'tool_call', turnId: 't1', name: 'fetch_url', ok: true, durationMs: 20, agent: 'researcher' },
    ]);
    expect(s.agents).toEqual({
      researcher: { runs: 2, answered: 1, promptTokens: 3000, completionTokens: 150, p50Ms: 300, p95Ms: 300 },
      coder: { runs: 1, answered: 1, promptTokens: 10, completionTokens: 1, p50Ms: 50, p95Ms: 50 },
    });
    // A sub-agent's tools are counted under their own names like the main agent's.
    expect(s.tools.fetch_url?.calls).toBe(1);
    const lines = formatStats(s);
    expect(lines.slice(lines.indexOf('Sub-agents:'))).toEqual([
      'Sub-agents:',
      '  researcher: 2 runs, 50% ok, 3000 in, 150 out, p50 300 ms, p95 300 ms',
      '  coder: 1 run, 100% ok, 10 in, 1 out, p50 50 ms, p95 50 ms',
    ]);
    expect(formatStats(summarise([{ type: 'turn_end', turnId: 't', outcome: 'answered', steps: 1 }]))).not.toContain('Sub-agents:');
  });
});
