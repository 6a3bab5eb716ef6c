import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/basics/clock.js';
import { probeSandbox } from '../src/capabilities/sandbox/probe.js';
import { discoverLayout } from '../src/capabilities/sandbox/layout.js';
import { sandboxLimits } from '../src/capabilities/sandbox/limits.js';
import { openWorkspace } from '../src/capabilities/workspace/workspace.js';
import { percentile, round } from './stats.js';

/**
 * run_code start-up overhead: from spawning the sandbox to the program's first line of output, for
 * python and bash, beside the same interpreter spawned plainly (no sandbox). Also the whole
 * run_code call (workspace snapshot before and after, hand-over to the sandbox user, output).
 */

export interface SandboxSizes {
  runs: number;
}

export interface SandboxRow {
  language: 'python' | 'bash';
  how: 'sandboxed (bwrap)' | 'plain spawn' | 'whole run_code call';
  runs: number;
  p50Ms: number;
  p99Ms: number;
}

export interface SandboxStartupResult {
  sizes: SandboxSizes;
  rows: SandboxRow[];
  runAsRoot: boolean;
  errors: string[];
}

const LINE: Record<'python' | 'bash', string> = { python: 'print("first line")', bash: 'echo first line' };

/** The same interpreter binary the sandbox runs (not a version-manager shim earlier on PATH). */
function plainFirstLine(language: 'python' | 'bash', cmd: string): Promise<number> {
  const args = ['-c', LINE[language]];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let first: number | undefined;
    child.stdout.once('data', () => {
      first = performance.now() - started;
    });
    child.on('error', reject);
    child.on('close', () => (first === undefined ? reject(new Error(`${cmd} printed nothing`)) : resolve(first)));
  });
}

export async function runSandboxStartup(sizes: SandboxSizes, log: (line: string) => void): Promise<SandboxStartupResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-bench-sandbox-'));
  await chmod(dir, 0o711);
  const files = { workspaceDir: path.join(dir, 'workspaces'), workspaceMb: 200, maxFileMb: 25, codeTimeoutMs: 60_000, codeMemoryMb: 512 };
  try {
    const probe = await probeSandbox({ workspaceDir: files.workspaceDir, limits: sandboxLimits(files), clock: systemClock });
    if (!probe.ok) return { sizes, rows: [], runAsRoot: process.getuid?.() === 0, errors: [`sandbox: cannot run here: ${probe.problem}`] };
    const { layout } = await discoverLayout();
    const workspace = openWorkspace(path.join(files.workspaceDir, 'bench'), { quotaBytes: 200 * 1024 * 1024, maxFileBytes: 25 * 1024 * 1024 });
    const rows: SandboxRow[] = [];
    for (const language of ['python', 'bash'] as const) {
      const sandboxed: number[] = [];
      const whole: number[] = [];
      const plain: number[] = [];
      // Interleaved, so machine load drifts into all three alike.
      for (let i = 0; i < sizes.runs; i++) {
        const started = performance.now();
        const r = await probe.sandbox.run({ workspace, language, code: LINE[language], timeoutMs: 30_000 });
        whole.push(performance.now() - started);
        if (r.firstOutputMs === undefined || r.exitCode !== 0) throw new Error(`sandboxed ${language} printed nothing (exit ${r.exitCode}): ${r.stderr.slice(0, 200)}`);
        sandboxed.push(r.firstOutputMs);
        plain.push(await plainFirstLine(language, layout!.interpreters[language]!));
      }
      const row = (how: SandboxRow['how'], xs: number[]): SandboxRow => ({ language, how, runs: xs.length, p50Ms: round(percentile(xs, 50), 1), p99Ms: round(percentile(xs, 99), 1) });
      rows.push(row('sandboxed (bwrap)', sandboxed), row('plain spawn', plain), row('whole run_code call', whole));
      log(`   ${language}: sandboxed p50 ${rows.at(-3)!.p50Ms} ms, plain p50 ${rows.at(-2)!.p50Ms} ms`);
    }
    return { sizes, rows, runAsRoot: process.getuid?.() === 0, errors: [] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
