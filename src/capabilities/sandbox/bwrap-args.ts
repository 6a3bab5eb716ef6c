/**
 * The bubblewrap command line for one run_code call. Pure: the host facts it needs (which system
 * folders exist, where node is) come in as a `SystemLayout` found once at start.
 *
 * Start from nothing and add only what an interpreter needs:
 * - every namespace unshared (`--unshare-all`): no network (only the namespace's own loopback, up
 *   but reaching nothing outside), own PID namespace (the code sees only itself), own IPC, UTS and
 *   cgroup namespaces;
 * - a user namespace in which the code is uid/gid 65534 with no capabilities, and no further user
 *   namespaces (`--disable-userns`);
 * - the system folders (`/usr`, `/lib*`, `/bin`…) and a few `/etc` files the loader and the
 *   interpreters read, all read-only; nothing else of the host — no home, no data dir, no checkout;
 * - a fresh, size-limited `/tmp`, a new `/proc` and a minimal, read-only `/dev` with a size-limited
 *   `/dev/shm`: the only writable places besides the workspace, and counted in the memory limit;
 * - the session's workspace, read-write, as the working directory `/workspace`;
 * - the code itself as a read-only file under /run/code (passed through a pipe: never on disk);
 * - an empty environment apart from PATH, HOME and LANG;
 * - `--die-with-parent`: if the bot dies, the sandbox dies with it;
 * - per-process limits set inside by prlimit, before the interpreter starts (processes, memory,
 *   file size, CPU seconds, no core dumps).
 */

export type Language = 'python' | 'javascript' | 'bash';
export const LANGUAGES: readonly Language[] = ['python', 'javascript', 'bash'];

export interface SystemLayout {
  bwrap: string;
  prlimit: string;
  /** Top-level folders bound read-only at the same path (/usr, and /lib64 etc. when they are real folders). */
  roDirs: string[];
  /** Top-level symlinks recreated as they are (merged-/usr hosts: /bin → usr/bin). */
  links: Array<{ path: string; target: string }>;
  /** /etc files and folders bound read-only when they exist. */
  etc: string[];
  /** Interpreter paths as seen inside the sandbox; absent when not installed. */
  interpreters: Partial<Record<Language, string>>;
  /** Extra read-only binds (node's binary when it lives outside the system folders). */
  extraBinds: Array<{ host: string; inside: string }>;
}

export interface SandboxLimits {
  memoryBytes: number;
  maxProcesses: number;
  maxFileBytes: number;
  cpuSeconds: number;
  tmpBytes: number;
}

export const SANDBOX_UID = 65534;
export const WORKSPACE_MOUNT = '/workspace';
export const CODE_DIR = '/run/code';
/** The fd (in bwrap's stdio array) through which the code is handed over. */
export const CODE_FD = 3;

const SCRIPT: Record<Language, string> = { python: 'main.py', javascript: 'main.js', bash: 'main.sh' };

export function scriptPath(language: Language): string {
  return `${CODE_DIR}/${SCRIPT[language]}`;
}

/** The interpreter command line inside the sandbox. */
export function interpreterArgs(language: Language, interpreter: string): string[] {
  const script = scriptPath(language);
  if (language === 'python') {
    // -B: no .pyc files in the workspace. The workspace goes first on sys.path, so the code can
    // import modules it wrote there, as it could when run from that folder.
    const boot = `import runpy, sys; sys.argv = [${JSON.stringify(script)}]; sys.path.insert(0, ${JSON.stringify(WORKSPACE_MOUNT)}); runpy.run_path(${JSON.stringify(script)}, run_name='__main__')`;
    return [interpreter, '-B', '-c', boot];
  }
  return [interpreter, script];
}

export function bwrapArgs(layout: SystemLayout, opts: { workspace: string; language: Language; limits: SandboxLimits }): string[] {
  const interpreter = layout.interpreters[opts.language];
  if (!interpreter) throw new Error(`no interpreter for ${opts.language}`);
  const { limits } = opts;
  const args = [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--uid', String(SANDBOX_UID),
    '--gid', String(SANDBOX_UID),
    '--hostname', 'sandbox',
    '--die-with-parent',
    '--new-session',
  ];
  for (const dir of layout.roDirs) args.push('--ro-bind', dir, dir);
  for (const link of layout.links) args.push('--symlink', link.target, link.path);
  for (const entry of layout.etc) args.push('--ro-bind', entry, entry);
  for (const bind of layout.extraBinds) args.push('--ro-bind', bind.host, bind.inside);
  args.push(
    '--proc', '/proc',
    // --dev makes /dev a writable tmpfs with no size cap whose pages belong to no process, so the
    // memory watch could not see them (363 MB written under a 256 MB limit). /dev is made read-only
    // (its device nodes stay usable); /dev/shm, which Python's multiprocessing needs, is a capped
    // tmpfs like /tmp, and both count in the memory limit (code-sandbox.ts).
    '--dev', '/dev',
    '--size', String(limits.tmpBytes), '--tmpfs', '/dev/shm',
    '--remount-ro', '/dev',
    '--size', String(limits.tmpBytes), '--tmpfs', '/tmp',
    '--bind', opts.workspace, WORKSPACE_MOUNT,
    '--ro-bind-data', String(CODE_FD), scriptPath(opts.language),
    '--remount-ro', '/',
    '--chdir', WORKSPACE_MOUNT,
    '--clearenv',
    '--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin',
    '--setenv', 'HOME', '/tmp',
    '--setenv', 'LANG', 'C.UTF-8',
    '--',
    layout.prlimit,
    `--nproc=${limits.maxProcesses}`,
    `--data=${limits.memoryBytes}`,
    `--fsize=${limits.maxFileBytes}`,
    `--cpu=${limits.cpuSeconds}`,
    '--core=0',
    '--',
    ...interpreterArgs(opts.language, interpreter),
  );
  return args;
}
