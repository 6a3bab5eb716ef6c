import type { Logger } from 'pino';

/**
 * After an uncaught exception the process state is undefined (a half-applied update, a stream
 * mid-write): carrying on risks doing the wrong thing quietly. So: log it, flush the traces (the
 * record of what led here), and exit non-zero. The durable inbox and approval records make the
 * restart safe, and the supervisor (systemd Restart=on-failure, Docker --restart) starts it again.
 *
 * An unhandled promise rejection is logged and the process keeps running: every path that can
 * reject is expected to be caught where it happens, and one that is not is a bug to fix, not a
 * sign that memory is corrupt.
 */
export interface CrashDeps {
  log: Logger;
  /** Writes buffered traces; given at most `flushTimeoutMs`. */
  flush: () => Promise<void>;
  exit: (code: number) => void;
  flushTimeoutMs?: number;
}

export const CRASH_EXIT_CODE = 1;

export function installCrashHandlers(proc: Pick<NodeJS.Process, 'on'>, deps: CrashDeps): void {
  let crashing = false;
  proc.on('uncaughtException', (err: Error) => {
    deps.log.fatal({ err: err?.message ?? String(err), stack: err?.stack }, 'uncaught exception; flushing traces and exiting');
    // A second exception while flushing: exit at once, the first one is already logged.
    if (crashing) return deps.exit(CRASH_EXIT_CODE);
    crashing = true;
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, deps.flushTimeoutMs ?? 2_000).unref());
    void Promise.race([deps.flush().catch(() => undefined), timeout]).finally(() => deps.exit(CRASH_EXIT_CODE));
  });
  proc.on('unhandledRejection', (reason: unknown) => {
    deps.log.error({ err: (reason as Error)?.message ?? String(reason), stack: (reason as Error)?.stack }, 'unhandled rejection (kept running)');
  });
}
