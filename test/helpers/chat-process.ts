import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * `npm run chat` as a real child process in its own process group, driven through pipes, so a
 * test can type lines, wait for output, and kill -9 the whole tree (npm → tsx → node).
 */
export interface ChatProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  send(line: string): void;
  /** Resolves when stdout (from `from` on) matches; rejects on timeout or exit. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  endInput(): void;
  exited(): Promise<number | null>;
  kill9(): Promise<void>;
}

export function startChat(env: Record<string, string>): ChatProcess {
  // What `npm run chat` runs (tsx src/main.ts --chat), without npm's own start-up per process.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--chat'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let exitedFlag = false;
  void exit.then(() => { exitedFlag = true; });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    send: (line) => child.stdin.write(`${line}\n`),
    waitFor(pattern, timeoutMs = 45_000, from = 0) {
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const tick = () => {
          const m = pattern.exec(out.slice(from));
          if (m) return resolve(m[0]);
          if (exitedFlag) return reject(new Error(`chat exited before ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
          if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
          setTimeout(tick, 25);
        };
        tick();
      });
    },
    endInput: () => child.stdin.end(),
    exited: () => exit,
    async kill9() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await exit;
    },
  };
}
