import { createHash } from 'node:crypto';
import { chmod, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where the session workspaces live when the bot runs as root.
 *
 * As root, bwrap runs as the sandbox user (uid 65534, see code-sandbox.ts), and bwrap itself must
 * walk the host path to the workspace it binds. A first trial on a server keeps the data under
 * /root or another private (0700) folder, which that user cannot pass through, and run_code then
 * went missing. Binding the workspace from an open descriptor (`--bind-fd`) does not help: bwrap
 * reads it through /proc/self/fd, which that user cannot read either. So when the folder the
 * settings give is closed to other users and was not chosen on purpose (HERMES_WORKSPACE_DIR
 * unset), the workspaces go to a folder the bot creates where every user may pass (but not list),
 * one per data folder. A HERMES_WORKSPACE_DIR set on purpose is kept, and the probe explains it.
 */

/** Created with their parents; 0711: other users may pass through, not list. */
export const REACHABLE_ROOTS = ['/var/lib/hermes/workspaces'];

export type WorkspaceRoot =
  | { kind: 'as_configured'; dir: string }
  | { kind: 'moved'; dir: string; from: string; closedAt: string }
  | { kind: 'unreachable'; dir: string; closedAt: string };

/** The first folder on the way to `dir` (itself included once it exists) that others cannot pass through. */
export async function closedAncestor(dir: string): Promise<string | undefined> {
  const chain: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    chain.unshift(d);
    if (d === path.dirname(d)) break;
  }
  for (const d of chain) {
    const s = await stat(d).catch(() => undefined);
    if (!s) return undefined; // not there yet: the bot creates it with 0711
    if ((s.mode & 0o001) === 0) return d;
  }
  return undefined;
}

export async function sandboxWorkspaceRoot(opts: {
  workspaceDir: string;
  dataDir: string;
  /** HERMES_WORKSPACE_DIR was set: the operator chose the place. */
  chosen: boolean;
  runsAsRoot: boolean;
  roots?: readonly string[];
}): Promise<WorkspaceRoot> {
  if (!opts.runsAsRoot) return { kind: 'as_configured', dir: opts.workspaceDir };
  const closedAt = await closedAncestor(opts.workspaceDir);
  if (!closedAt) return { kind: 'as_configured', dir: opts.workspaceDir };
  if (opts.chosen) return { kind: 'unreachable', dir: opts.workspaceDir, closedAt };
  // One folder per data folder, so two bots on one host never share workspaces.
  const id = createHash('sha256').update(path.resolve(opts.dataDir)).digest('hex').slice(0, 12);
  for (const root of opts.roots ?? REACHABLE_ROOTS) {
    const dir = path.join(root, id);
    try {
      await mkdirReachable(dir);
      if (await closedAncestor(dir)) continue;
      return { kind: 'moved', dir, from: opts.workspaceDir, closedAt };
    } catch {
      continue; // read-only or missing: try the next place
    }
  }
  return { kind: 'unreachable', dir: opts.workspaceDir, closedAt };
}

/** mkdir -p where each folder it creates is 0711 (the umask would otherwise decide). */
async function mkdirReachable(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let d = dir; !(await stat(d).catch(() => undefined)); d = path.dirname(d)) {
    missing.unshift(d);
    if (d === path.dirname(d)) break;
  }
  await mkdir(dir, { recursive: true, mode: 0o711 });
  for (const d of missing) await chmod(d, 0o711);
}

/** The log line for a moved or unreachable root. */
export function workspaceRootNote(root: WorkspaceRoot): string | undefined {
  if (root.kind === 'moved') {
    return `workspaces are in ${root.dir}: run_code's sandbox user (uid 65534) cannot pass through ${root.closedAt}, which holds ${root.from}; set HERMES_WORKSPACE_DIR to choose another place`;
  }
  return undefined;
}
