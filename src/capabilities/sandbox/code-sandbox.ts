import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { lchown } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { Clock } from '../../basics/clock.js';
import { OUTPUTS_DIR, type SessionWorkspace } from '../workspace/workspace.js';
import { diffWalks, measureUsage, walk, type WalkResult, type WorkspaceUsage } from '../workspace/walk.js';
import { bwrapArgs, SANDBOX_UID, type Language, type SandboxLimits, type SystemLayout } from './bwrap-args.js';
import { HeadTail } from './output-capture.js';
import { scratchBytes, treeMemoryBytes } from './process-memory.js';

/**
 * Runs code under bubblewrap with the limits of bwrap-args.ts, and reports what happened.
 *
 * Why the code runs as an unprivileged host user: the kernel does not apply RLIMIT_NPROC to root,
 * and a user namespace alone maps the sandbox's uid back to the bot's. So when the bot runs as root,
 * bwrap itself is started as uid/gid 65534 (node's spawn drops to it before exec), its processes
 * count against that user's limit, and the workspace is handed to that uid before each run.
 * Limits that hold for every process tree, whoever runs it: the wall-clock timeout, the memory
 * watch (summed proportional memory of all sandbox processes plus what sits in its in-memory /tmp
 * and /dev/shm) and the output cap, all enforced here by
 * killing bwrap and the namespace's first process (killSandbox) — the PID namespace dies with
 * it, so no process of the run survives; a stopped run returns within STOP_GRACE_MS whatever happens.
 */

export interface CodeSandboxOptions {
  layout: SystemLayout;
  limits: SandboxLimits;
  clock: Clock;
  /** Host uid/gid bwrap runs as; default: 65534 when the bot is root, else the bot's own. */
  runAs?: { uid: number; gid: number };
}

export interface RunRequest {
  workspace: SessionWorkspace;
  language: Language;
  code: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Why a run was stopped from outside (absent when it ended on its own). */
export type StopReason = 'timeout' | 'memory' | 'output' | 'cancelled';

export interface RunResult {
  exitCode: number | null;
  /** Set when the process was ended by a signal (a limit, a crash). */
  signal?: string;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** From spawning the sandbox to the first byte of stdout (the bench's start-up overhead). */
  firstOutputMs?: number;
  timedOut: boolean;
  stoppedFor?: StopReason;
  files: { created: string[]; changed: string[]; deleted: string[]; truncated: boolean };
  /** The workspace once the run ended, counted exactly (up to its entry cap). */
  workspaceUsage: WorkspaceUsage;
  /** Workspace-relative file with the whole output, when the model sees only head and tail. */
  fullOutput?: string;
  /** Why the full output could not be kept (quota), when it could not. */
  fullOutputProblem?: string;
}

export class SandboxStartError extends Error {
  override name = 'SandboxStartError';
}

/** What the model sees of each stream: head and tail, ~20,000 characters for both together. */
export const STREAM_HEAD_CHARS = 6_000;
export const STREAM_TAIL_CHARS = 4_000;
/** Output past this (both streams) stops the run: big results belong in a file. */
export const OUTPUT_STOP_BYTES = 8 * 1024 * 1024;
const MEMORY_POLL_MS = 200;
/** A stopped run ends this long after the stop at the latest, even if something still holds its pipes. */
export const STOP_GRACE_MS = 3_000;

export interface CodeSandbox {
  readonly languages: Language[];
  run(req: RunRequest): Promise<RunResult>;
}

export function defaultRunAs(): { uid: number; gid: number } | undefined {
  return process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : undefined;
}

export function createCodeSandbox(opts: CodeSandboxOptions): CodeSandbox {
  const runAs = opts.runAs ?? defaultRunAs();
  const languages = (['python', 'javascript', 'bash'] as const).filter((l) => opts.layout.interpreters[l]);

  return {
    languages,
    async run(req) {
      const root = await req.workspace.ensure();
      if (runAs) await handOver(root, runAs);
      const before = await walk(root);
      const started = opts.clock.now();
      const outcome = await spawnBwrap(opts, runAs, root, req);
      const durationMs = opts.clock.now() - started;
      const after = await walk(root);
      const files = { ...diffWalks(before, after), truncated: before.truncated || after.truncated };
      const result: RunResult = {
        exitCode: outcome.exitCode,
        ...(outcome.signal && { signal: outcome.signal }),
        stdout: outcome.stdout.text(),
        stderr: outcome.stderr.text(),
        durationMs,
        ...(outcome.firstOutputMs !== undefined && { firstOutputMs: outcome.firstOutputMs }),
        timedOut: outcome.stoppedFor === 'timeout',
        ...(outcome.stoppedFor && { stoppedFor: outcome.stoppedFor }),
        files,
        workspaceUsage: await measureUsage(root, req.workspace.limits.maxEntries),
      };
      if (outcome.stdout.truncated || outcome.stderr.truncated) await keepFullOutput(req.workspace, started, outcome, result);
      return result;
    },
  };
}

interface SpawnOutcome {
  exitCode: number | null;
  signal?: string;
  stoppedFor?: StopReason;
  firstOutputMs?: number;
  stdout: HeadTail;
  stderr: HeadTail;
  raw: { stdout: Buffer[]; stderr: Buffer[] };
}

function spawnBwrap(opts: CodeSandboxOptions, runAs: CodeSandboxOptions['runAs'], root: string, req: RunRequest): Promise<SpawnOutcome> {
  // CPU seconds per process follow the wall-clock limit: a busy loop is stopped either way.
  const limits = { ...opts.limits, cpuSeconds: Math.ceil(req.timeoutMs / 1000) + 1 };
  const args = bwrapArgs(opts.layout, { workspace: root, language: req.language, limits });
  return new Promise((resolve, reject) => {
    const spawnedAt = performance.now();
    let firstOutputMs: number | undefined;
    const child = spawn(opts.layout.bwrap, args, {
      cwd: '/',
      // bwrap clears the environment for the code anyway (--clearenv); it gets none of ours either.
      env: { PATH: '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      // Its own process group, so a stop reaches the namespace's first process too while bwrap is
      // still setting it up (killSandbox).
      detached: true,
      ...(runAs && { uid: runAs.uid, gid: runAs.gid }),
    });
    const stdout = new HeadTail(STREAM_HEAD_CHARS, STREAM_TAIL_CHARS);
    const stderr = new HeadTail(STREAM_HEAD_CHARS, STREAM_TAIL_CHARS);
    const raw = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let stoppedFor: StopReason | undefined;
    let outputBytes = 0;
    let graceTimer: NodeJS.Timeout | undefined;
    const stop = (why: StopReason) => {
      if (stoppedFor) return;
      stoppedFor = why;
      killSandbox(child);
      // Bounded: if anything still holds the pipes open after the kill, the run ends anyway.
      graceTimer = setTimeout(() => {
        killSandbox(child);
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, STOP_GRACE_MS);
      graceTimer.unref();
    };
    const collect = (capture: HeadTail, keep: Buffer[]) => (chunk: Buffer) => {
      capture.push(chunk);
      outputBytes += chunk.length;
      if (outputBytes <= OUTPUT_STOP_BYTES) keep.push(chunk);
      else stop('output');
    };
    child.stdout!.once('data', () => {
      firstOutputMs = performance.now() - spawnedAt;
    });
    child.stdout!.on('data', collect(stdout, raw.stdout));
    child.stderr!.on('data', collect(stderr, raw.stderr));

    const codePipe = child.stdio[3] as Writable;
    codePipe.on('error', () => undefined); // bwrap failing early closes it; its stderr says why
    codePipe.end(req.code);

    const cancelTimer = opts.clock.setTimer(() => stop('timeout'), req.timeoutMs);
    const onAbort = () => stop('cancelled');
    req.signal?.addEventListener('abort', onAbort, { once: true });
    if (req.signal?.aborted) onAbort();
    let watching = true;
    const watch = async () => {
      while (watching && child.pid !== undefined) {
        await new Promise((r) => setTimeout(r, MEMORY_POLL_MS));
        if (!watching) break;
        // Processes and the tmpfs scratch folders share one limit: both are the host's memory.
        if ((await treeMemoryBytes(child.pid)) + (await scratchBytes(child.pid)) > opts.limits.memoryBytes) stop('memory');
      }
    };
    void watch();

    child.on('error', (err) => {
      watching = false;
      cancelTimer();
      clearTimeout(graceTimer);
      req.signal?.removeEventListener('abort', onAbort);
      reject(new SandboxStartError(`could not start bwrap (${opts.layout.bwrap}): ${err.message}`));
    });
    child.on('close', (code, signal) => {
      watching = false;
      cancelTimer();
      clearTimeout(graceTimer);
      req.signal?.removeEventListener('abort', onAbort);
      stdout.end();
      stderr.end();
      const errText = stderr.text();
      if (!stoppedFor && code === 1 && /^bwrap: /m.test(errText) && stdout.bytes === 0) {
        reject(new SandboxStartError(`the sandbox could not start: ${errText.trim().split('\n')[0]}`));
        return;
      }
      // bwrap reports a child killed by a signal as 128 + its number.
      const bySignal = code !== null && code > 128 && code < 160 ? signalName(code - 128) : undefined;
      resolve({ exitCode: code, ...((signal ?? bySignal) && { signal: signal ?? bySignal }), stoppedFor, firstOutputMs, stdout, stderr, raw });
    });
  });
}

/**
 * Ends a run's whole process tree. Killing bwrap is enough once the sandbox is up (its first child,
 * the PID namespace's init, dies with it, and the namespace with that). While bwrap is still
 * setting up, its child may not have asked to die with its parent yet (measured: a stop 1–40 ms
 * after the spawn left the code running under a stray bwrap, holding the run's pipes), so the
 * child is killed directly — that ends the namespace — and so is bwrap's process group, which the
 * child is in until it starts a session of its own. Read and kills happen in one synchronous step.
 */
function killSandbox(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  let inner: number[] = [];
  try {
    inner = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    /* bwrap has exited */
  }
  for (const p of inner) signal(p, 'SIGKILL');
  signal(-pid, 'SIGKILL');
  child.kill('SIGKILL');
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* already gone */
  }
}

function signalName(n: number): string {
  const names: Record<number, string> = { 6: 'SIGABRT', 9: 'SIGKILL', 11: 'SIGSEGV', 15: 'SIGTERM', 24: 'SIGXCPU', 25: 'SIGXFSZ' };
  return names[n] ?? `signal ${n}`;
}

/** When the bot is root, the sandbox user must own the workspace to write in it. Links are not followed. */
async function handOver(root: string, runAs: { uid: number; gid: number }): Promise<void> {
  await lchown(root, runAs.uid, runAs.gid);
  const tree: WalkResult = await walk(root);
  for (const e of tree.entries) {
    if (e.uid !== runAs.uid) await lchown(path.join(root, e.rel), runAs.uid, runAs.gid).catch(() => undefined);
  }
}

async function keepFullOutput(workspace: SessionWorkspace, started: number, outcome: SpawnOutcome, result: RunResult): Promise<void> {
  const stamp = new Date(started).toISOString().replace(/[:.]/g, '-');
  const rel = `${OUTPUTS_DIR}/run-${stamp}.txt`;
  const body = Buffer.concat([
    Buffer.from('=== stdout ===\n'),
    ...outcome.raw.stdout,
    Buffer.from('\n=== stderr ===\n'),
    ...outcome.raw.stderr,
    ...(outcome.stoppedFor === 'output' ? [Buffer.from(`\n[output stopped after ${OUTPUT_STOP_BYTES} bytes]\n`)] : []),
  ]);
  try {
    const saved = await workspace.write(rel, body);
    result.fullOutput = saved.rel;
  } catch (err) {
    result.fullOutputProblem = (err as Error).message;
  }
}
