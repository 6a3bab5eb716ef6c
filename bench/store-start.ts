import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/clock.js';
import { createFactStore } from '../src/memory/fact-store.js';
import { createSqliteStore } from '../src/store/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import type { Speaker } from '../src/types.js';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { startFakeSlack } from '../test/fakes/slack/fake-slack.js';
import { BENCH_DIR } from './peer-loader.js';
import { median, round, withDeadline } from './stats.js';

/**
 * Section 4: facts written and read per second on the SQLite store (the same createFactStore the
 * memory tools use), raw store writes per second for scale, and cold start of `npm start` in
 * Slack HTTP mode until the "ready" log line and until GET /healthz answers 200.
 */
export interface StoreSizes { users: number; factsPerUser: number; reads: number; rawWrites: number; starts: number }

export interface StoreResult {
  factWritesPerSecond: number;
  factReadsPerSecond: number;
  rawStoreWritesPerSecond: number;
  facts: number;
  coldStart: { runs: number; readyMsMedian: number; healthzMsMedian: number; readyMs: number[]; healthzMs: number[] } | undefined;
  errors: string[];
}

const speaker = (i: number): Speaker => ({ platform: 'slack', workspaceId: 'TBENCH', userId: `U${i}`, displayName: `user${i}` });
const START_TIMEOUT_MS = 60_000;

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

  const ready: number[] = [];
  const healthz: number[] = [];
  for (let i = 0; i < sizes.starts; i++) {
    try {
      const r = await coldStartOnce();
      ready.push(r.readyMs);
      healthz.push(r.healthzMs);
    } catch (err) {
      errors.push(`cold start: ${(err as Error).message}`);
      break;
    }
  }
  if (ready.length) log(`start: ready after ${round(median(ready), 0)} ms`);
  const coldStart = ready.length
    ? { runs: ready.length, readyMsMedian: round(median(ready), 0), healthzMsMedian: round(median(healthz), 0), readyMs: ready.map((x) => round(x, 0)), healthzMs: healthz.map((x) => round(x, 0)) }
    : undefined;
  return { ...result, coldStart, errors };
}

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

/** One `npm start` from spawn to the ready line and to the first 200 from /healthz. */
async function coldStartOnce(): Promise<{ readyMs: number; healthzMs: number }> {
  const [slack, ai, dataDir, port] = await Promise.all([startFakeSlack(), startFakeOpenAI(), mkdtemp(path.join(os.tmpdir(), 'hermes-bench-start-')), freePort()]);
  const t0 = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: path.join(BENCH_DIR, '..'),
    // Its own process group, so stopping it also stops tsx and node under npm.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      OPENAI_BASE_URL: ai.url, OPENAI_API_KEY: 'bench-key', HERMES_DATA_DIR: dataDir, LOG_LEVEL: 'info',
      SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port),
    },
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  try {
    return await withDeadline('npm start', START_TIMEOUT_MS, async () => {
      const readyAt = new Promise<number>((resolve, reject) => {
        let buf = '';
        child.stdout!.on('data', (c: Buffer) => {
          buf = (buf + c.toString()).slice(-10_000);
          if (buf.includes('"msg":"ready"')) resolve(performance.now() - t0);
        });
        child.once('exit', (code) => reject(new Error(`npm start exited with ${code} before ready: ${stderr.trim().split('\n').slice(-3).join(' | ')}`)));
      });
      const healthAt = (async () => {
        for (let i = 0; i < START_TIMEOUT_MS / 10; i++) {
          const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) }).then((r) => r.status === 200, () => false);
          if (ok) return performance.now() - t0;
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error('/healthz never answered 200');
      })();
      const [readyMs, healthzMs] = await Promise.all([readyAt, healthAt]);
      return { readyMs, healthzMs };
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
