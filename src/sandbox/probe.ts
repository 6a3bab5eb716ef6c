import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../clock.js';
import { openWorkspace } from '../workspace/workspace.js';
import { SANDBOX_UID, type Language, type SandboxLimits } from './bwrap-args.js';
import { createCodeSandbox, defaultRunAs, SandboxStartError, type CodeSandbox } from './code-sandbox.js';
import { discoverLayout } from './layout.js';

/**
 * Can run_code be offered here? Answered once at start by really running one line of each language
 * in the sandbox, exactly as a tool call would. When it cannot, `run_code` is not offered at all
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
const PROBE_LINE: Record<Language, string> = { python: 'print("ok")', javascript: 'console.log("ok")', bash: 'echo ok' };

export async function probeSandbox(opts: { workspaceDir: string; limits: SandboxLimits; clock: Clock; bwrap?: string; searchPath?: string; timeoutMs?: number }): Promise<SandboxProbe> {
  const { layout, missing } = await discoverLayout({ bwrap: opts.bwrap, searchPath: opts.searchPath });
  if (!layout) {
    const problem = missing.includes('bwrap') ? `bwrap (bubblewrap) was not found on PATH: ${INSTALL_BWRAP}` : `prlimit was not found: ${INSTALL_PRLIMIT}`;
    return { ok: false, problem };
  }
  const sandbox = createCodeSandbox({ layout, limits: opts.limits, clock: opts.clock });
  const dir = path.join(opts.workspaceDir, `.probe-${process.pid}`);
  const unavailable: Array<{ language: Language; problem: string }> = [];
  try {
    await mkdir(opts.workspaceDir, { recursive: true, mode: 0o711 });
    const workspace = openWorkspace(dir, { quotaBytes: 1024 * 1024, maxFileBytes: 1024 * 1024 });
    for (const language of ['bash', 'python', 'javascript'] as const) {
      if (!layout.interpreters[language]) {
        unavailable.push({ language, problem: language === 'python' ? 'python3 is not installed: apt-get install python3' : `no ${language} interpreter found` });
        continue;
      }
      try {
        const r = await sandbox.run({ workspace, language, code: PROBE_LINE[language], timeoutMs: opts.timeoutMs ?? 15_000 });
        if (r.exitCode !== 0 || r.stdout.trim() !== 'ok') unavailable.push({ language, problem: `a test run failed (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().slice(0, 300)}` });
      } catch (err) {
        if (!(err instanceof SandboxStartError)) throw err;
        return { ok: false, problem: explain(err.message, opts.workspaceDir) };
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const languages = sandbox.languages.filter((l) => !unavailable.some((u) => u.language === l));
  if (languages.length === 0) return { ok: false, problem: `no language could run in the sandbox: ${unavailable.map((u) => `${u.language}: ${u.problem}`).join('; ')}` };
  return { ok: true, sandbox: { languages, run: sandbox.run }, unavailable };
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
