import { fork, type ChildProcess } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { compileBenchEntry } from './compile.js';
import type { DashboardProcessMessage, DashboardProcessRequest } from './dashboard-process.js';
import { median, percentile, round } from './stats.js';

/**
 * Section 7: the dashboard's turn list over many turns. Traces shaped like the tracer's (a system
 * prompt of ~1.5 KB, two model calls and a tool call per turn) are written across 30 day files;
 * the real dashboard then serves /dashboard/turns over HTTP on 127.0.0.1, in a process of its own
 * (dashboard-process.ts, compiled like `npm run build`). Measured: the first open in that fresh
 * process (the index reads every file once: a cold open), warm opens (only a stat per file), a
 * filtered open, the open right after 100 more turns were appended (only the new bytes are read),
 * and one turn's page; and the JS heap the dashboard holds for its index: the child's heap after
 * a full GC once the index is built, less the same before the first open.
 */
export interface DashboardSizes { turns: number; opens: number }

export interface DashboardResult {
  sizes: DashboardSizes;
  traceMb: number;
  firstOpenMs: number;
  /** CPU time the dashboard process spent on the first open (less bound to the machine's load than its wall time). */
  firstOpenCpuMs: number;
  warmOpenMedianMs: number;
  warmOpenP95Ms: number;
  filteredOpenMedianMs: number;
  afterAppendOpenMs: number;
  turnPageMedianMs: number;
  /** The dashboard process's JS heap after a full GC: before the first open, after it (10,000 turns indexed), and after the whole run (100 more). */
  heapMbBeforeIndex: number;
  heapMbAfterIndex: number;
  heapMbAfterRun: number;
  /** heapMbAfterIndex − heapMbBeforeIndex: what the index of sizes.turns turns holds. */
  indexHeapMb: number;
  errors: string[];
}

const TOKEN = 'bench-dashboard-token-0123456789';
const SYSTEM = `You are Hermes, a helpful assistant that works inside a team chat. ${'Use tools for anything about the real world right now instead of guessing. '.repeat(20)}`;
const DAYS = 30;

function turnLines(i: number, at: number): string {
  const id = `bench-${String(i).padStart(6, '0')}`;
  const ts = (ms: number) => new Date(at + ms).toISOString();
  const text = `question number ${i}: what is ${i} times 7?`;
  const call = { id: 'c1', name: 'calculator', arguments: JSON.stringify({ expression: `${i} * 7` }) };
  const lines = [
    { ts: ts(0), type: 'turn_start', turnId: id, sessionId: `s${i % 500}`, platform: i % 3 ? 'slack' : 'discord', userKey: `slack:T1:U${i % 50}`, text },
    { ts: ts(5), type: 'model_call', turnId: id, step: 1, model: 'gpt-4o-mini', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: text }], tools: ['calculator', 'get_current_time', 'web_search'], response: { content: null, toolCalls: [call], parseErrors: [] }, usage: { promptTokens: 900, completionTokens: 20 }, latencyMs: 400 },
    { ts: ts(410), type: 'tool_call', turnId: id, callId: 'c1', name: 'calculator', args: { expression: `${i} * 7` }, ok: i % 17 !== 0, result: String(i * 7), durationMs: 2 },
    { ts: ts(420), type: 'model_call', turnId: id, step: 2, model: 'gpt-4o-mini', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: text }, { role: 'assistant', content: null, toolCalls: [call] }, { role: 'tool', toolCallId: 'c1', name: 'calculator', content: String(i * 7) }], tools: ['calculator', 'get_current_time', 'web_search'], response: { content: `${i} times 7 is ${i * 7}.`, toolCalls: [], parseErrors: [] }, usage: { promptTokens: 950, completionTokens: 12 }, latencyMs: 300 },
    { ts: ts(730), type: 'turn_end', turnId: id, outcome: i % 23 ? 'answered' : 'max_steps', steps: 2, durationMs: 730, promptTokens: 1850, completionTokens: 32 },
  ];
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

const FIRST_DAY = Date.parse('2026-01-01T00:00:00Z');
const dayFile = (d: number) => `${new Date(FIRST_DAY + d * 86_400_000).toISOString().slice(0, 10)}.jsonl`;

/** Writes `turns` turns spread over DAYS day files; returns the bytes written. */
export async function writeTraces(dir: string, turns: number): Promise<number> {
  const perDay = Math.ceil(turns / DAYS);
  let bytes = 0;
  for (let d = 0; d * perDay < turns; d++) {
    let text = '';
    for (let i = d * perDay; i < Math.min(turns, (d + 1) * perDay); i++) text += turnLines(i, FIRST_DAY + d * 86_400_000 + (i - d * perDay) * 5_000);
    await writeFile(path.join(dir, dayFile(d)), text);
    bytes += Buffer.byteLength(text);
  }
  return bytes;
}

async function timed(url: string): Promise<{ ms: number; body: string }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(60_000) });
  const body = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return { ms, body };
}

const CHILD_DEADLINE_MS = 60_000;

/** Sends `req` and waits for the child's next message (bounded). */
function ask(child: ChildProcess, req: DashboardProcessRequest | undefined): Promise<DashboardProcessMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`dashboard process did not answer within ${CHILD_DEADLINE_MS / 1000} s`));
    }, CHILD_DEADLINE_MS);
    const onMessage = (m: DashboardProcessMessage) => {
      cleanup();
      if (m.type === 'error') reject(new Error(`dashboard process: ${m.message}`));
      else resolve(m);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`dashboard process exited with ${code}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    if (req) child.send(req);
  });
}

async function heapOf(child: ChildProcess): Promise<Extract<DashboardProcessMessage, { type: 'heap' }>> {
  const m = await ask(child, { type: 'heap' });
  if (m.type !== 'heap') throw new Error(`dashboard process answered ${m.type} to heap`);
  return m;
}

export async function runDashboard(sizes: DashboardSizes, log: (line: string) => void): Promise<DashboardResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-bench-dash-'));
  const traces = path.join(dir, 'traces');
  const errors: string[] = [];
  let child: ChildProcess | undefined;
  try {
    await mkdir(traces, { recursive: true });
    const bytes = await writeTraces(traces, sizes.turns);
    const entry = await compileBenchEntry('dashboard-process.ts');
    child = fork(entry, [traces, path.join(dir, 'evals'), TOKEN], { execArgv: ['--expose-gc'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const ready = await ask(child, undefined);
    if (ready.type !== 'ready') throw new Error(`dashboard process answered ${ready.type} first`);
    const root = `http://127.0.0.1:${ready.port}`;
    const base = `${root}/dashboard`;
    log(`   ${sizes.turns} turns, ${round(bytes / 1e6, 1)} MB of traces`);

    // The HTTP path itself warmed (not the dashboard), so the heap difference is the index's.
    await (await fetch(`${root}/healthz`, { signal: AbortSignal.timeout(10_000) })).text();
    const before = await heapOf(child);
    const first = await timed(`${base}/turns`);
    const shown = Number(/(\d+) turns?/.exec(first.body)?.[1]);
    if (shown !== sizes.turns) errors.push(`dashboard: the list said ${shown} turns, ${sizes.turns} were written`);
    const indexed = await heapOf(child);
    const heapMbBeforeIndex = before.heapBytes / 1e6;
    const heapMbAfterIndex = indexed.heapBytes / 1e6;
    const warm: number[] = [];
    const filtered: number[] = [];
    const turnPage: number[] = [];
    for (let i = 0; i < sizes.opens; i++) {
      warm.push((await timed(`${base}/turns?page=${1 + (i % 5)}`)).ms);
      filtered.push((await timed(`${base}/turns?platform=slack&text=times%207&outcome=answered`)).ms);
      turnPage.push((await timed(`${base}/turns/bench-${String((i * 97) % sizes.turns).padStart(6, '0')}`)).ms);
    }
    const lastDay = Math.ceil(sizes.turns / Math.ceil(sizes.turns / DAYS)) - 1;
    let extra = '';
    for (let i = 0; i < 100; i++) extra += turnLines(sizes.turns + i, FIRST_DAY + lastDay * 86_400_000 + 82_800_000 + i * 1000);
    await appendFile(path.join(traces, dayFile(lastDay)), extra);
    const after = await timed(`${base}/turns`);
    if (!after.body.includes(`${sizes.turns + 100} turns`)) errors.push('dashboard: appended turns did not appear in the list');
    const heapMbAfterRun = (await heapOf(child)).heapBytes / 1e6;
    log(`   first open ${round(first.ms, 1)} ms (${round((indexed.cpuBeforeGcUs - before.cpuAfterGcUs) / 1000, 1)} ms CPU); index heap ${round(heapMbAfterIndex - heapMbBeforeIndex, 1)} MB`);
    return {
      sizes,
      traceMb: round(bytes / 1e6, 1),
      firstOpenMs: round(first.ms, 1),
      firstOpenCpuMs: round((indexed.cpuBeforeGcUs - before.cpuAfterGcUs) / 1000, 1),
      warmOpenMedianMs: round(median(warm), 1),
      warmOpenP95Ms: round(percentile(warm, 95), 1),
      filteredOpenMedianMs: round(median(filtered), 1),
      afterAppendOpenMs: round(after.ms, 1),
      turnPageMedianMs: round(median(turnPage), 1),
      heapMbBeforeIndex: round(heapMbBeforeIndex, 1),
      heapMbAfterIndex: round(heapMbAfterIndex, 1),
      heapMbAfterRun: round(heapMbAfterRun, 1),
      indexHeapMb: round(heapMbAfterIndex - heapMbBeforeIndex, 1),
      errors,
    };
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
      child.send({ type: 'stop' } satisfies DashboardProcessRequest);
      const timer = setTimeout(() => child!.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  }
}
