import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../../basics/clock.js';
import { openWorkspace } from '../workspace/workspace.js';
import { SANDBOX_UID, type Language, type SandboxLimits } from './bwrap-args.js';
import { createCodeSandbox, defaultRunAs, SandboxStartError, type CodeSandbox } from './code-sandbox.js';
import { discoverLayout } from './layout.js';

/**
 * Can run_code be offered here? Answered once at start by really running one line in the sandbox,
 * exactly as a tool call would. When it cannot, `run_code` is not offered at all
 * and the log says what to install or enable — there is no unsandboxed fallback.
 */

export type SandboxProbe =
  | { ok: true; sandbox: CodeSandbox; /** Languages that could not run, each with the fix. */ unavailable: Array<{ language: Language; problem: string }> }
  | { ok: false; problem: string };

const INSTALL_BWRAP = 'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Alpine: apk add bubblewrap) and restart';
const INSTALL_PRLIMIT = 'install util-linux, which provides prlimit (Debian/Ubuntu: apt-get install util-linux), and restart';
const ENABLE_USERNS =
  'user namespaces are not available to the bot. On the host: sysctl -w kernel.unprivileged_userns_clone=1 (Debian/Ubuntu kernels) and user.max_user_namespaces=15000; ' +
  'on Ubuntu 23.10+ also kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile allowing userns for bwrap). ' +
  'In Docker, run the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined ' +
  '(or a seccomp profile that allows clone/unshare with CLONE_NEWUSER); Kubernetes: the same through the pod\'s securityContext. See docs/files-and-code.md';

export async function probeSandbox(opts: { workspaceDir: string; limits: SandboxLimits; clock: Clock; bwrap?: string; searchPath?: string; timeoutMs?: number }): Promise<SandboxProbe> {
  const { layout, missing } = await discoverLayout({ bwrap: opts.bwrap, searchPath: opts.searchPath });
  if (!layout) {
    const problem = missing.includes('bwrap') ? `bwrap (bubblewrap) was not found on PATH: ${INSTALL_BWRAP}` : `prlimit was not found: ${INSTALL_PRLIMIT}`;
    return { ok: false, problem };
  }
  const sandbox = createCodeSandbox({ layout, limits: opts.limits, clock: opts.clock });
  const dir = path.join(opts.workspaceDir, `.probe-${process.pid}`);
  const unavailable: Array<{ language: Language; problem: string }> = [];
  // One real run proves bwrap, user namespaces, prlimit and the workspace folder; it is kept to one
  // (bash, the quickest) because the bot waits for it at start. The other interpreters are checked
  // without running them.
  try {
    await mkdir(opts.workspaceDir, { recursive: true, mode: 0o711 });
    const workspace = openWorkspace(dir, { quotaBytes: 1024 * 1024, maxFileBytes: 1024 * 1024 });
    if (!layout.interpreters.bash) return { ok: false, problem: 'bash was not found in /usr/bin or /bin: install bash' };
    try {
      const r = await sandbox.run({ workspace, language: 'bash', code: 'echo ok', timeoutMs: opts.timeoutMs ?? 15_000 });
      if (r.exitCode !== 0 || r.stdout.trim() !== 'ok') return { ok: false, problem: `a test run in the sandbox failed (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().slice(0, 300)}` };
    } catch (err) {
      if (!(err instanceof SandboxStartError)) throw err;
      return { ok: false, problem: explain(err.message, opts.workspaceDir) };
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (!layout.interpreters.python) unavailable.push({ language: 'python', problem: 'python3 is not installed: apt-get install python3' });
  const runAs = defaultRunAs();
  for (const bind of layout.extraBinds) {
    if (runAs && !(await readableByOthers(bind.host))) {
      unavailable.push({ language: 'javascript', problem: `the bot runs as root and node (${bind.host}) is in a folder other users cannot read, so the sandbox user cannot run it: install node under /usr (e.g. the nodejs package) or run the bot as a non-root user` });
    }
  }
  const languages = sandbox.languages.filter((l) => !unavailable.some((u) => u.language === l));
  return { ok: true, sandbox: { languages, run: sandbox.run }, unavailable };
}

/** Whether a user other than the owner can reach and read `file` (every folder above it searchable). */
async function readableByOthers(file: string): Promise<boolean> {
  try {
    if (((await stat(file)).mode & 0o005) !== 0o005) return false;
    for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
      if (((await stat(dir)).mode & 0o001) === 0) return false;
      if (dir === path.dirname(dir)) return true;
    }
  } catch {
    return false;
  }
}

/** bwrap's own error → the fix a person can apply. */
export function explain(message: string, workspaceDir: string): string {
  if (/namespace|uid map|setting up uid|Operation not permitted|No permissions/i.test(message)) return `${message}. ${ENABLE_USERNS}`;
  if (/Can't (find|get type of) source path .*Permission denied/i.test(message) && defaultRunAs()) {
    return (
      `${message}. The bot runs as root, so code runs as uid ${SANDBOX_UID}, which cannot reach HERMES_WORKSPACE_DIR=${workspaceDir} ` +
      '(a folder above it is closed to other users). Set HERMES_WORKSPACE_DIR to a folder every user can pass through (chmod o+x on each parent), e.g. /var/lib/hermes/workspaces, or run the bot as a non-root user'
    );
  }
  if (/ENOENT|not found/i.test(message)) return `${message}. ${INSTALL_BWRAP}`;
  return message;
}
