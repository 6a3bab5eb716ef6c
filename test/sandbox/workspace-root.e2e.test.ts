import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import { probeSandbox } from '../../src/capabilities/sandbox/probe.js';
import { closedAncestor, sandboxWorkspaceRoot, workspaceRootNote } from '../../src/capabilities/sandbox/workspace-root.js';
import { openWorkspace } from '../../src/capabilities/workspace/workspace.js';
import { TEST_LIMITS, traversableTempDir } from './sandbox-helper.js';

/**
 * The bot as root with its data under a private (0700) folder, as on a first trial on a server:
 * run_code's sandbox user (uid 65534) cannot pass through that folder, so the workspaces go to a
 * folder the bot creates that it can reach — proved with real bwrap runs.
 */
const asRoot = process.getuid?.() === 0;
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('where the workspaces live', () => {
  it('without root nothing moves; a folder chosen on purpose is kept and reported', async () => {
    const priv = await mkdtemp(path.join(os.tmpdir(), 'hermes-priv-'));
    dirs.push(priv);
    const ws = path.join(priv, 'data', 'workspaces');
    expect(await sandboxWorkspaceRoot({ workspaceDir: ws, dataDir: path.join(priv, 'data'), chosen: false, runsAsRoot: false })).toEqual({ kind: 'as_configured', dir: ws });
    expect(await closedAncestor(ws)).toBe(priv);
    expect(await sandboxWorkspaceRoot({ workspaceDir: ws, dataDir: path.join(priv, 'data'), chosen: true, runsAsRoot: true })).toEqual({ kind: 'unreachable', dir: ws, closedAt: priv });
  });

  it.skipIf(!asRoot)('as root under a 0700 folder: the sandbox cannot reach the data folder, and works in the folder the bot creates', async () => {
    const priv = await mkdtemp(path.join(os.tmpdir(), 'hermes-priv-')); // 0700, like /root
    const reachable = await traversableTempDir('hermes-reach-');
    dirs.push(priv, reachable);
    expect((await stat(priv)).mode & 0o777).toBe(0o700);
    const dataDir = path.join(priv, 'data');
    const configured = path.join(dataDir, 'workspaces');
    await mkdir(configured, { recursive: true });

    // What happened before: the probe fails, so run_code was not offered.
    const before = await probeSandbox({ workspaceDir: configured, limits: TEST_LIMITS, clock: systemClock });
    expect(before.ok).toBe(false);
    expect(!before.ok && before.problem).toMatch(/uid 65534, which cannot reach HERMES_WORKSPACE_DIR/);

    const root = await sandboxWorkspaceRoot({ workspaceDir: configured, dataDir, chosen: false, runsAsRoot: true, roots: [path.join(reachable, 'var-lib-hermes', 'workspaces')] });
    expect(root.kind).toBe('moved');
    expect(root.dir.startsWith(path.join(reachable, 'var-lib-hermes', 'workspaces'))).toBe(true);
    expect(workspaceRootNote(root)).toContain(`cannot pass through ${priv}`);
    for (const d of [path.join(reachable, 'var-lib-hermes'), root.dir]) expect((await stat(d)).mode & 0o777).toBe(0o711);

    const probe = await probeSandbox({ workspaceDir: root.dir, limits: TEST_LIMITS, clock: systemClock });
    if (!probe.ok) throw new Error(`the sandbox should start in ${root.dir}: ${probe.problem}`);
    const workspace = openWorkspace(path.join(root.dir, 'session-1'), { quotaBytes: 1024 * 1024, maxFileBytes: 1024 * 1024 });
    const r = await probe.sandbox.run({ workspace, language: 'bash', code: 'id -u; echo made > made.txt', timeoutMs: 15_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('65534');
    expect(readFileSync(path.join(root.dir, 'session-1', 'made.txt'), 'utf8')).toBe('made\n');

    // The same data folder always gets the same place (its files are there on the next start).
    const again = await sandboxWorkspaceRoot({ workspaceDir: configured, dataDir, chosen: false, runsAsRoot: true, roots: [path.join(reachable, 'var-lib-hermes', 'workspaces')] });
    expect(again.dir).toBe(root.dir);
    expect(existsSync(path.join(again.dir, 'session-1', 'made.txt'))).toBe(true);
  }, 60_000);
});
