import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBench, type BenchResult, type BenchSizes } from '../../bench/bench.js';

/**
 * Runs the hermes-only parts of `npm run bench` at a tiny size so the bench code cannot rot.
 * Checks the shape and sanity of what it writes, never timings (this machine is shared).
 */
const TINY: BenchSizes = {
  overhead: { warmupTurns: 1, rounds: 2, turnsPerRound: 2 },
  throughput: { sessions: [1, 3], rounds: () => 2, modelLatencyMs: 50 },
  tokens: { turns: 14, peerTurns: 2, contextTokens: 2500 },
  store: { users: 3, factsPerUser: 4, reads: 20, rawWrites: 20, starts: 1 },
  instances: { sessions: [2], rounds: () => 2, modelLatencyMs: 50 },
  sandbox: { runs: 2 },
  dashboard: { turns: 300, opens: 2 },
  soak: { hermesTurns: 120, peerTurns: 0, sampleEvery: 30, warmupTurns: 5 },
  streaming: { turns: 3, chunks: 4, chunkDelayMs: 10 },
};

describe('npm run bench (hermes-only, tiny)', () => {
  let outDir = '';
  let result: BenchResult;
  afterAll(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('runs every section and writes latest.json / latest.md with sane values', async () => {
    outDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-bench-test-'));
    result = await runBench({ sizes: TINY, mode: 'test', peers: false, outDir, log: () => undefined });

    expect(result.errors).toEqual([]);
    expect(result.peersIncluded).toEqual([]);
    expect(result.machine.cores).toBeGreaterThan(0);
    expect(result.machine.node).toBe(process.version);
    expect(result.machine.cpuModel.length).toBeGreaterThan(0);

    const names = result.overhead!.rows.map((r) => r.name);
    expect(names).toEqual(['raw openai SDK (baseline)', 'hermes-agent (gateway)', 'hermes-agent (agent loop only)']);
    for (const r of result.overhead!.rows) {
      expect(r.turns).toBe(TINY.overhead.rounds * TINY.overhead.turnsPerRound);
      expect(r.wallMsPerStep).toBeGreaterThan(0);
      expect(r.cpuMsPerStep).toBeGreaterThan(0);
      expect(r.heapKbPerTurn).toBeGreaterThan(0);
    }

    expect(result.throughput!.rows.map((r) => r.sessions)).toEqual([1, 3]);
    for (const r of result.throughput!.rows) {
      expect(r.failures).toBe(0);
      expect(r.replies).toBe(r.sessions * 2);
      expect(r.physicalLimit).toBe(r.sessions / 0.05);
      expect(Number.isFinite(r.replyAboveModelP99Ms)).toBe(true);
      expect(r.storeOpsPerReply).toBeGreaterThan(0);
      expect(r.peakRssMb).toBeGreaterThan(10);
    }

    const tokens = result.tokens!;
    const [hermes, full] = tokens.rows;
    expect(hermes!.requests).toBe(full!.requests);
    expect(hermes!.max).toBeLessThanOrEqual(TINY.tokens.contextTokens);
    expect(full!.max).toBeGreaterThan(hermes!.max);
    expect(tokens.summaryCalls).toBeGreaterThan(0);
    expect(tokens.factRecalled).toBe(true);
    expect(tokens.factWhere).toBe('summary');

    const store = result.store!;
    expect(store.facts).toBe(12);
    expect(store.factWritesPerSecond).toBeGreaterThan(0);
    expect(store.factReadsPerSecond).toBeGreaterThan(0);
    expect(store.coldStart!.runs).toBe(1);
    expect(store.coldStart!.healthzMsMedian).toBeGreaterThan(0);
    // What npm start runs is one node process (the compiled build; no loader process, npm aside).
    expect(store.coldStart!.processes).toHaveLength(1);
    expect(store.coldStart!.idleRssMbMedian).toBeGreaterThan(20);
    expect(store.terminalChat!.processes).toHaveLength(1);
    expect(store.terminalChat!.idleRssMb).toBeGreaterThan(20);

    // The run_code start-up section needs the real sandbox (bwrap), as CI has.
    const sandbox = result.sandbox!;
    expect(sandbox.rows.map((r) => `${r.language} ${r.how}`)).toEqual([
      'python sandboxed (bwrap)', 'python plain spawn', 'python whole run_code call',
      'bash sandboxed (bwrap)', 'bash plain spawn', 'bash whole run_code call',
    ]);
    for (const r of sandbox.rows) {
      expect(r.runs).toBe(2);
      expect(r.p50Ms).toBeGreaterThan(0);
    }

    const statuses = result.goals.map((g) => g.status);
    expect(statuses.slice(0, 8)).toEqual(['not measured', 'not measured', 'not measured', 'not measured', 'not measured', 'not measured', 'met', 'not measured']);
    // Footprint (idle RSS, cold start) is measured at every size; met or missed depends on the machine.
    expect(result.goals.slice(8, 10).map((g) => g.goal)).toEqual(['Idle RSS of what `npm start` runs ≤ 150 MB', 'Cold start to "msg":"ready" ≤ 1 s']);
    for (const s of statuses.slice(8, 10)) expect(['met', 'missed']).toContain(s);
    expect(result.goals[10]).toMatchObject({ goal: 'Dashboard: a list of 10,000 turns opens in under 1 s', status: 'not measured' });
    expect(result.goals[11]).toMatchObject({ goal: 'Dashboard: the index of 10,000 turns holds ≤ 50 MB of heap, first open ≤ 300 ms', status: 'not measured' });
    expect(result.goals[12]).toMatchObject({ goal: 'Memory: no growth over a 20,000-turn soak', status: 'not measured' });

    expect(result.goals[13]!.goal).toMatch(/^Streaming: first visible text/);
    expect(['met', 'missed']).toContain(result.goals[13]!.status);

    const streaming = result.streaming!;
    expect(streaming.firstVisibleP50Ms).toBeGreaterThanOrEqual(0);
    expect(Number.isFinite(streaming.firstVisibleMaxMs)).toBe(true);
    // A streamed answer opens and closes its stream where a whole one is one post: at least one call more.
    expect(streaming.extraCallsPerAnswer).toBeGreaterThanOrEqual(1);
    expect(streaming.streamedCallMix['chat.startStream']).toBe(1);
    expect(streaming.streamedCallMix['chat.stopStream']).toBe(1);

    const soak = result.soak!;
    expect(soak.rows.map((r) => r.name)).toEqual(['hermes-agent (gateway)']);
    expect(soak.rows[0]!.samples.map((s) => s.turns)).toEqual([0, 30, 60, 90, 120]);
    for (const s of soak.rows[0]!.samples) expect(s.rssMb).toBeGreaterThan(s.heapMb);
    expect(Number.isFinite(soak.rows[0]!.heapMbPer1kTurns)).toBe(true);

    const dashboard = result.dashboard!;
    expect(dashboard.sizes.turns).toBe(300);
    expect(dashboard.traceMb).toBeGreaterThan(0);
    for (const ms of [dashboard.firstOpenMs, dashboard.warmOpenMedianMs, dashboard.afterAppendOpenMs, dashboard.turnPageMedianMs]) expect(ms).toBeGreaterThan(0);
    // Measured in the dashboard's own process after a full GC, not the bench's heap.
    expect(dashboard.heapMbBeforeIndex).toBeGreaterThan(0);
    expect(dashboard.indexHeapMb).toBeCloseTo(dashboard.heapMbAfterIndex - dashboard.heapMbBeforeIndex, 0);

    // PostgreSQL comes from the test run (HERMES_TEST_PG_URL, started by the global setup or CI).
    const instances = result.instances!;
    expect(instances.setups.map((t) => t.setup)).toEqual(['SQLite, 1 instance', 'PostgreSQL, 1 instance', 'PostgreSQL, 2 instances']);
    for (const t of instances.setups) {
      expect(t.rows).toHaveLength(1);
      expect(t.rows[0]!.failures).toBe(0);
      expect(t.rows[0]!.replies).toBe(4);
      expect(t.rows[0]!.storeOpsPerReply).toBeGreaterThan(0);
    }

    const written = JSON.parse(await readFile(path.join(outDir, 'latest.json'), 'utf8')) as BenchResult;
    expect(written.schema).toBe('hermes-bench/1');
    expect(written.tokens!.rows[0]!.max).toBe(hermes!.max);
    const md = await readFile(path.join(outDir, 'latest.md'), 'utf8');
    expect(md).toContain('| hermes-agent (gateway) |');
    expect(md).toContain('#### Goals');
    expect(md).toContain('| PostgreSQL, 2 instances | 2 |');
    expect(md).toContain('#### 6. run_code start-up overhead');
    expect(md).toContain('#### 7. Dashboard turn list (300 turns');
    expect(md).toContain('#### 8. Memory over many turns');
    expect(md).toContain('#### 9. Answers shown as they are written');
  }, 180_000);
});
