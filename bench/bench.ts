import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeMachine, describeVersions } from './machine.js';
import { runOverhead, type OverheadSizes } from './overhead.js';
import { loadPeers, PEER_INSTALL_HINT, peersInstalled } from './peer-loader.js';
import { renderMarkdown } from './report.js';
import { runStoreAndStart, type StoreSizes } from './store-start.js';
import { runThroughput, type ThroughputSizes } from './throughput.js';
import { runInstances } from './instances.js';
import { runTokens, type TokenSizes } from './tokens.js';
import { evaluateGoals } from './goals.js';
import { runSandboxStartup, type SandboxSizes } from './sandbox-startup.js';
import { runDashboard, type DashboardSizes } from './dashboard.js';
import { runSoak, type SoakSizes } from './soak.js';
import { runStreaming, type StreamingSizes } from './streaming.js';
import type { BenchResult } from './bench-result.js';

export type { BenchResult } from './bench-result.js';

export type Section = 'overhead' | 'throughput' | 'tokens' | 'store' | 'instances' | 'sandbox' | 'dashboard' | 'soak' | 'streaming';
export const SECTIONS: Section[] = ['overhead', 'throughput', 'tokens', 'store', 'instances', 'sandbox', 'dashboard', 'soak', 'streaming'];

export interface BenchSizes {
  overhead: OverheadSizes;
  throughput: ThroughputSizes;
  tokens: TokenSizes;
  store: StoreSizes;
  /** Section 5: the throughput test per store setup (SQLite; PostgreSQL with one and two instances). */
  instances: ThroughputSizes;
  sandbox: SandboxSizes;
  dashboard: DashboardSizes;
  /** Memory over many turns: hermes-agent for the goal's 20,000 turns; peers fewer, to keep the run near its size. */
  soak: SoakSizes;
  /** Answers shown as they are written: time to first visible text, platform calls per answer. */
  streaming: StreamingSizes;
}

/** Sized for ~10 minutes on a 2-core machine. */
export const FULL: BenchSizes = {
  overhead: { warmupTurns: 40, rounds: 20, turnsPerRound: 20 },
  throughput: { sessions: [1, 50, 500], rounds: (n) => (n <= 1 ? 30 : n <= 50 ? 10 : 4), modelLatencyMs: 200 },
  tokens: { turns: 200, peerTurns: 60, contextTokens: 8000 },
  store: { users: 100, factsPerUser: 50, reads: 10_000, rawWrites: 3000, starts: 5 },
  instances: { sessions: [1, 50], rounds: (n) => (n <= 1 ? 20 : 6), modelLatencyMs: 200 },
  sandbox: { runs: 60 },
  dashboard: { turns: 10_000, opens: 20 },
  soak: { hermesTurns: 20_000, peerTurns: 5_000, sampleEvery: 500, warmupTurns: 200 },
  streaming: { turns: 40, chunks: 8, chunkDelayMs: 40 },
};

/** A smoke run of about a minute. */
export const QUICK: BenchSizes = {
  overhead: { warmupTurns: 5, rounds: 3, turnsPerRound: 5 },
  throughput: { sessions: [1, 50], rounds: (n) => (n <= 1 ? 5 : 2), modelLatencyMs: 200 },
  tokens: { turns: 60, peerTurns: 8, contextTokens: 8000 },
  store: { users: 10, factsPerUser: 20, reads: 500, rawWrites: 300, starts: 1 },
  instances: { sessions: [1, 50], rounds: (n) => (n <= 1 ? 5 : 2), modelLatencyMs: 200 },
  sandbox: { runs: 15 },
  dashboard: { turns: 10_000, opens: 5 },
  soak: { hermesTurns: 2_000, peerTurns: 500, sampleEvery: 250, warmupTurns: 50 },
  streaming: { turns: 8, chunks: 6, chunkDelayMs: 30 },
};

export interface BenchOptions {
  sizes: BenchSizes;
  mode: string;
  sections?: Section[];
  /** false: hermes-only even when peers are installed (the test). */
  peers?: boolean;
  outDir: string;
  log?: (line: string) => void;
}

/** Runs the chosen sections one after another and writes latest.{json,md} plus timestamped copies. */
export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const sections = opts.sections ?? SECTIONS;
  const started = Date.now();
  const errors: string[] = [];
  const notes: string[] = [];
  if (opts.peers !== false && !peersInstalled()) {
    log(PEER_INSTALL_HINT);
    notes.push('Peers were not installed (`npm --prefix bench install`): hermes-only run.');
  }
  const peers = opts.peers === false ? [] : await loadPeers((name, err) => errors.push(`peer ${name} could not be loaded: ${err.message}`));
  const result: BenchResult = {
    schema: 'hermes-bench/1',
    mode: opts.mode,
    startedAt: new Date(started).toISOString(),
    durationS: 0,
    machine: describeMachine(),
    versions: describeVersions(),
    peersIncluded: peers.map((p) => p.name),
    goals: [],
    errors,
    notes,
  };

  const guard = async <T>(name: Section, fn: () => Promise<T>): Promise<T | undefined> => {
    if (!sections.includes(name)) return undefined;
    log(`== ${name}`);
    try {
      return await fn();
    } catch (err) {
      errors.push(`${name}: ${(err as Error).message}`);
      return undefined;
    }
  };
  result.overhead = await guard('overhead', () => runOverhead(opts.sizes.overhead, peers, log));
  // BENCH_SESSIONS=500 (or 1,50,500) runs section 2 at those levels only, e.g. the 500-session level in a --quick run.
  const levels = process.env.BENCH_SESSIONS?.split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  const throughputSizes = levels?.length ? { ...opts.sizes.throughput, sessions: levels } : opts.sizes.throughput;
  result.throughput = await guard('throughput', () => runThroughput(throughputSizes, log));
  result.tokens = await guard('tokens', () => runTokens(opts.sizes.tokens, peers, log));
  result.store = await guard('store', () => runStoreAndStart(opts.sizes.store, log));
  result.instances = await guard('instances', () => runInstances(opts.sizes.instances, log));
  result.sandbox = await guard('sandbox', () => runSandboxStartup(opts.sizes.sandbox, log));
  result.dashboard = await guard('dashboard', () => runDashboard(opts.sizes.dashboard, log));
  result.soak = await guard('soak', () => runSoak(opts.sizes.soak, peers, log));
  result.streaming = await guard('streaming', () => runStreaming(opts.sizes.streaming, log));
  for (const part of [result.overhead, result.throughput, result.tokens, result.store, result.instances, result.sandbox, result.dashboard, result.soak, result.streaming]) errors.push(...(part?.errors ?? []));
  result.goals = evaluateGoals(result);
  result.durationS = Math.round((Date.now() - started) / 100) / 10;

  await mkdir(opts.outDir, { recursive: true });
  const md = renderMarkdown(result);
  const json = `${JSON.stringify(result, null, 2)}\n`;
  const stamp = result.startedAt.replace(/[:.]/g, '-');
  await Promise.all([
    writeFile(path.join(opts.outDir, 'latest.json'), json),
    writeFile(path.join(opts.outDir, 'latest.md'), md),
    writeFile(path.join(opts.outDir, `${stamp}.json`), json),
    writeFile(path.join(opts.outDir, `${stamp}.md`), md),
  ]);
  return result;
}
