import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Whether util-linux `script` (our pseudo-terminal) is here; CI installs it and must not skip. */
export function hasScript(): boolean {
  return spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
}

/**
 * The terminal chat in a real pseudo-terminal: util-linux `script` runs `npm run chat` with a pty
 * as its stdin and stdout, and relays what we write as keystrokes. So raw mode, the prompt and
 * the 4 KB line limit of a terminal in line mode are all real.
 */
export interface PtyChat {
  child: ChildProcessWithoutNullStreams;
  /** Everything the terminal showed, escape sequences included. */
  screen(): string;
  /** Keystrokes, as a person (or a paste) types them: end a line with \r. */
  type(keys: string): void;
  /** Resolves when the screen (from `from` on) matches. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  exited(): Promise<number | null>;
  kill(): Promise<void>;
}

export function startPtyChat(env: Record<string, string>): PtyChat {
  const command = `${path.join(ROOT, 'node_modules/.bin/tsx')} ${path.join(ROOT, 'src/main.ts')} --chat`;
  const child = spawn('script', ['-qefc', command, '/dev/null'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TERM: 'xterm', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let exitedFlag = false;
  void exit.then(() => { exitedFlag = true; });
  return {
    child,
    screen: () => out,
    type: (keys) => void child.stdin.write(keys),
    waitFor(pattern, timeoutMs = 45_000, from = 0) {
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const tick = () => {
          const m = pattern.exec(out.slice(from));
          if (m) return resolve(m[0]);
          if (exitedFlag) return reject(new Error(`chat exited before ${pattern}; screen:\n${out}`));
          if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${pattern}; screen:\n${out}`));
          setTimeout(tick, 25);
        };
        tick();
      });
    },
    exited: () => exit,
    async kill() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await exit;
    },
  };
}
