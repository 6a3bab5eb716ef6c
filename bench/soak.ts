import { fork } from 'node:child_process';
import path from 'node:path';
import type { PeerModule } from './peers/peer-api.js';
import { BENCH_DIR } from './peer-loader.js';
import type { SoakMessage, SoakSample } from './soak-process.js';
import { round } from './stats.js';

/**
 * Section 6: memory over many turns. Each runner soaks in a process of its own (soak-process.ts):
 * one-step turns against a fake model that answers at once, RSS and heap sampled after a full GC.
 * Growth is the least-squares slope over the second half of the run, in MB per 1,000 turns: the
 * first half lets bounded caches (hermes' store read cache holds 20,000 entries) fill, so what
 * still grows after it is what would grow for ever. hermes-agent gets its full production path
 * (gateway, SQLite, traces, a new conversation every turn); peers run their fresh-conversation turn.
 */
export interface SoakSizes { hermesTurns: number; peerTurns: number; sampleEvery: number; warmupTurns: number }

export interface SoakRow {
  name: string;
  turns: number;
  seconds: number;
  rssStartMb: number;
  rssEndMb: number;
  rssPeakMb: number;
  /** Slopes over the second half of the run. */
  rssMbPer1kTurns: number;
  heapMbPer1kTurns: number;
  samples: SoakSample[];
}

export interface SoakResult { sizes: SoakSizes; rows: SoakRow[]; errors: string[] }

const RUN_DEADLINE_MS = 10 * 60_000;

export async function runSoak(sizes: SoakSizes, peers: PeerModule[], log: (line: string) => void): Promise<SoakResult> {
  const rows: SoakRow[] = [];
  const errors: string[] = [];
  const plan = [{ name: 'hermes-agent (gateway)', turns: sizes.hermesTurns }, ...peers.map((p) => ({ name: p.name, turns: sizes.peerTurns }))];
  for (const { name, turns } of plan) {
    try {
      const { samples, seconds } = await soakOne(name, turns, sizes);
      rows.push(toRow(name, turns, seconds, samples));
      log(`soak: ${name} ${turns} turns in ${round(seconds, 1)} s`);
    } catch (err) {
      errors.push(`soak ${name}: ${(err as Error).message}`);
    }
  }
  return { sizes, rows, errors };
}

function soakOne(name: string, turns: number, sizes: SoakSizes): Promise<{ samples: SoakSample[]; seconds: number }> {
  const child = fork(path.join(BENCH_DIR, 'soak-process.ts'), [name, String(turns), String(sizes.sampleEvery), String(sizes.warmupTurns)], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`did not finish within ${RUN_DEADLINE_MS / 60_000} minutes`));
    }, RUN_DEADLINE_MS);
    let answered = false;
    child.on('message', (m: SoakMessage) => {
      answered = true;
      clearTimeout(timer);
      if (m.type === 'error') reject(new Error(m.message));
      else resolve(m);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!answered) reject(new Error(`process exited with ${code} before reporting`));
    });
  });
}

/** Least-squares slope of y over x, scaled to per 1,000 turns. */
function slopePer1k(points: Array<{ x: number; y: number }>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return den === 0 ? NaN : (num / den) * 1000;
}

function toRow(name: string, turns: number, seconds: number, samples: SoakSample[]): SoakRow {
  const late = samples.filter((s) => s.turns >= turns / 2);
  return {
    name,
    turns,
    seconds: round(seconds, 1),
    rssStartMb: round(samples[0]?.rssMb ?? NaN, 1),
    rssEndMb: round(samples.at(-1)?.rssMb ?? NaN, 1),
    rssPeakMb: round(Math.max(...samples.map((s) => s.rssMb)), 1),
    rssMbPer1kTurns: round(slopePer1k(late.map((s) => ({ x: s.turns, y: s.rssMb }))), 3),
    heapMbPer1kTurns: round(slopePer1k(late.map((s) => ({ x: s.turns, y: s.heapMb }))), 3),
    samples: samples.map((s) => ({ turns: s.turns, rssMb: round(s.rssMb, 1), heapMb: round(s.heapMb, 1), externalMb: round(s.externalMb, 1) })),
  };
}
