import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/basics/clock.js';
import { createFactStore } from '../src/state/memory/fact-store.js';
import { createSqliteStore } from '../src/state/store/sqlite-store.js';
import type { Store } from '../src/state/store/store.js';
import type { Speaker } from '../src/basics/types.js';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { startFakeSlack } from '../test/fakes/slack/fake-slack.js';
import { BENCH_DIR } from './peer-loader.js';
import { median, round, withDeadline } from './stats.js';
import { nodeTreeRssMb, type TreeProcess } from './process-tree.js';
import { ensureBuilt } from '../test/helpers/ensure-build.js';

/**
 * Section 4: facts written and read per second on the SQLite store (the same createFactStore the
 * memory tools use), raw store writes per second for scale, and cold start of `npm start` (the
 * compiled build) in Slack HTTP mode until the "ready" log line and until GET /healthz answers 200,
 * with the idle RSS of what it runs; then one terminal-chat start for its idle RSS.
 */
export interface StoreSizes { users: number; factsPerUser: number; reads: number; rawWrites: number; starts: number }

export interface StoreResult {
  factWritesPerSecond: number;
  factReadsPerSecond: number;
  rawStoreWritesPerSecond: number;
  facts: number;
  /** Slack HTTP mode, `sizes.starts` runs; idle RSS sums the node processes under npm. */
  coldStart:
    | { runs: number; readyMsMedian: number; healthzMsMedian: number; readyMs: number[]; healthzMs: number[]; idleRssMbMedian?: number; idleRssMb: number[]; processes?: string[] }
    | undefined;
  /** One start of the terminal chat (no platform configured), as the issue's baseline was taken. */
  terminalChat?: { readyMs: number; idleRssMb?: number; processes?: string[] };
  errors: string[];
}

const speaker = (i: number): Speaker => ({ platform: 'slack', workspaceId: 'TBENCH', userId: `U${i}`, displayName: `user${i}` });
const START_TIMEOUT_MS = 60_000;
/** After ready: the model probe has answered and start-up garbage is collectable. */
const IDLE_SETTLE_MS = 2000;

async function rate(n: number, fn: (i: number) => Promise<unknown>, concurrency: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await fn(next++);
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

export async function runStoreAndStart(sizes: StoreSizes, log: (line: string) => void): Promise<StoreResult> {
  const errors: string[] = [];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-bench-store-'));
  let store: Store | undefined;
  let result: Omit<StoreResult, 'coldStart' | 'errors'>;
  try {
    store = await createSqliteStore({ file: path.join(dir, 'hermes.sqlite') });
    const facts = createFactStore(store, systemClock);
    const total = sizes.users * sizes.factsPerUser;
    // Users in parallel (as different people talk at once), each user's facts in order.
    const writes = await rate(total, (i) => facts.forUser(speaker(i % sizes.users)).remember(`fact number ${i} about project ${i % 97}: the deadline is day ${i % 28}`), sizes.users);
    const reads = await rate(sizes.reads, (i) => facts.forUser(speaker(i % sizes.users)).recall(`project ${i % 97}`), sizes.users);
    const raw = await rate(sizes.rawWrites, (i) => store!.set(`bench:raw:${i}`, { i, text: 'x'.repeat(200) }), 1);
    result = { factWritesPerSecond: round(writes, 0), factReadsPerSecond: round(reads, 0), rawStoreWritesPerSecond: round(raw, 0), facts: total };
    log(`store: ${result.factWritesPerSecond} fact writes/s, ${result.factReadsPerSecond} reads/s`);
  } finally {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  }

  // Measure the build `npm start` runs, made from these sources (rebuilt first if they changed).
  await ensureBuilt();
  const runs: StartRun[] = [];
  for (let i = 0; i < sizes.starts; i++) {
    try {
      runs.push(await startOnce('slack'));
    } catch (err) {
      errors.push(`cold start: ${(err as Error).message}`);
      break;
    }
  }
  let terminalChat: StoreResult['terminalChat'];
  try {
    const r = await startOnce('chat');
    terminalChat = { readyMs: round(r.readyMs, 0), idleRssMb: r.idle && round(r.idle.totalMb, 1), processes: r.idle?.processes.map(describe) };
  } catch (err) {
    errors.push(`terminal chat start: ${(err as Error).message}`);
  }
  const ready = runs.map((r) => r.readyMs);
  const rss = runs.flatMap((r) => (r.idle ? [r.idle.totalMb] : []));
  if (ready.length) log(`start: ready after ${round(median(ready), 0)} ms; idle RSS ${rss.length ? `${round(median(rss), 1)} MB` : 'not measured'}`);
  const coldStart = ready.length
    ? {
        runs: ready.length,
        readyMsMedian: round(median(ready), 0),
        healthzMsMedian: round(median(runs.map((r) => r.healthzMs!)), 0),
        readyMs: ready.map((x) => round(x, 0)),
        healthzMs: runs.map((r) => round(r.healthzMs!, 0)),
        idleRssMbMedian: rss.length ? round(median(rss), 1) : undefined,
        idleRssMb: rss.map((x) => round(x, 1)),
        processes: runs.at(-1)?.idle?.processes.map(describe),
      }
    : undefined;
  return { ...result, coldStart, terminalChat, errors };
}

const describe = (p: TreeProcess): string => `${p.name} ${round(p.rssMb, 1)} MB`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

interface StartRun { readyMs: number; healthzMs?: number; idle?: { totalMb: number; processes: TreeProcess[] } }

/**
 * One `npm start` from spawn to the ready line (and, in Slack HTTP mode, to the first 200 from
 * /healthz), then the idle RSS of the node processes under npm after a short settle (the model
 * probe that follows ready has answered by then). `chat`: the terminal chat, no platform set.
 */
async function startOnce(mode: 'slack' | 'chat'): Promise<StartRun> {
  const [slack, ai, dataDir, port] = await Promise.all([startFakeSlack(), startFakeOpenAI(), mkdtemp(path.join(os.tmpdir(), 'hermes-bench-start-')), freePort()]);
  const env: NodeJS.ProcessEnv = { ...process.env, OPENAI_BASE_URL: ai.url, OPENAI_API_KEY: 'bench-key', HERMES_DATA_DIR: dataDir, LOG_LEVEL: 'info', PORT: String(port) };
  for (const name of Object.keys(env)) if (/^(SLACK|DISCORD)_/.test(name)) delete env[name];
  if (mode === 'slack') Object.assign(env, { SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl });
  const t0 = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: path.join(BENCH_DIR, '..'),
    // Its own process group, so stopping it also stops node under npm. The terminal chat reads a
    // pipe that stays open (and empty), as when it is supervised.
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env,
  });
  let stderr = '';
  try {
    return await withDeadline('npm start', START_TIMEOUT_MS, async () => {
      const readyAt = new Promise<number>((resolve, reject) => {
        // Logs go to stdout, or to stderr in the terminal chat (which owns stdout).
        let buf = '';
        const seen = (c: Buffer) => {
          buf = (buf + c.toString()).slice(-10_000);
          if (buf.includes('"msg":"ready"')) resolve(performance.now() - t0);
        };
        child.stdout!.on('data', seen);
        child.stderr!.on('data', (c: Buffer) => {
          stderr = (stderr + c.toString()).slice(-2000);
          seen(c);
        });
        child.once('exit', (code) => reject(new Error(`npm start exited with ${code} before ready: ${stderr.trim().split('\n').slice(-3).join(' | ')}`)));
      });
      const healthAt = mode === 'chat' ? Promise.resolve(undefined) : (async () => {
        for (let i = 0; i < START_TIMEOUT_MS / 10; i++) {
          const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) }).then((r) => r.status === 200, () => false);
          if (ok) return performance.now() - t0;
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error('/healthz never answered 200');
      })();
      const [readyMs, healthzMs] = await Promise.all([readyAt, healthAt]);
      await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
      return { readyMs, healthzMs, idle: nodeTreeRssMb(child.pid!) };
    });
  } finally {
    if (child.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid, 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    }
    await Promise.all([slack.close(), ai.close()]);
    await rm(dataDir, { recursive: true, force: true });
  }
}
