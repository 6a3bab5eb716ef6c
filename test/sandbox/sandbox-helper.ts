import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/basics/clock.js';
import type { SandboxLimits } from '../../src/capabilities/sandbox/bwrap-args.js';
import type { CodeSandbox } from '../../src/capabilities/sandbox/code-sandbox.js';
import { probeSandbox } from '../../src/capabilities/sandbox/probe.js';
import { openWorkspace, type SessionWorkspace } from '../../src/capabilities/workspace/workspace.js';

/**
 * The real bubblewrap sandbox for tests. In CI (CI=true) a sandbox that cannot start fails the
 * test with the probe's reason; elsewhere the caller skips, and the reason is printed.
 */

export const MB = 1024 * 1024;

export const TEST_LIMITS: SandboxLimits = {
  memoryBytes: 256 * MB,
  maxProcesses: 64,
  maxFileBytes: 20 * MB,
  cpuSeconds: 30,
  tmpBytes: 16 * MB,
};

/**
 * A temp folder the sandbox user can pass through: when the tests run as root, bwrap runs as
 * uid 65534, and mkdtemp's 0700 would shut it out.
 */
export async function traversableTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o711);
  return dir;
}

export interface SandboxFixture {
  sandbox?: CodeSandbox;
  /** Why there is no sandbox (only outside CI). */
  skipReason?: string;
  dir: string;
  workspace(name?: string, quotaMb?: number): SessionWorkspace;
  close(): Promise<void>;
}

export async function startSandbox(limits: SandboxLimits = TEST_LIMITS): Promise<SandboxFixture> {
  const dir = await traversableTempDir('hermes-sandbox-');
  const probe = await probeSandbox({ workspaceDir: path.join(dir, 'workspaces'), limits, clock: systemClock });
  let skipReason: string | undefined;
  if (!probe.ok) {
    if (process.env.CI === 'true') {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`CI=true but the run_code sandbox cannot run here, so the sandbox tests cannot prove anything: ${probe.problem}`);
    }
    skipReason = probe.problem;
    process.stderr.write(`sandbox tests skipped: ${probe.problem}\n`);
  } else if (probe.unavailable.length && process.env.CI === 'true') {
    throw new Error(`CI=true but some languages cannot run in the sandbox: ${probe.unavailable.map((u) => `${u.language}: ${u.problem}`).join('; ')}`);
  }
  return {
    ...(probe.ok ? { sandbox: probe.sandbox } : { skipReason }),
    dir,
    workspace: (name = 's1', quotaMb = 50) => openWorkspace(path.join(dir, 'workspaces', name), { quotaBytes: quotaMb * MB, maxFileBytes: 10 * MB }),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * Host processes whose command line contains `token` (a marker only this test's code carries; other
 * sandbox tests may be running at the same time under the same uid). Zombies are not alive.
 */
export async function processesWith(token: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0/g, ' ');
      const state = /^State:\s+(\S)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
      if (cmdline.includes(token) && state !== 'Z') found.push(`${pid}: ${cmdline}`);
    } catch {
      /* gone */
    }
  }
  return found;
}
