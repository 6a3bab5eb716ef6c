/**
 * The one line a failed connection at start becomes. A taken PORT used to print the listener's
 * raw error and a "could not connect" log record (which sounded like a network problem) and exit 1;
 * an unreachable Discord printed its error three times. Now each failure is said once, and a port
 * problem is a setting to fix: exit 2, as for any other bad setting.
 */

export interface StartFailure {
  line: string;
  exitCode: 1 | 2;
}

export function startFailure(err: unknown, port: number): StartFailure {
  const e = err as NodeJS.ErrnoException;
  const message = e?.message ?? String(err);
  const code = e?.code ?? /\b(EADDRINUSE|EACCES)\b/.exec(message)?.[1];
  if (code === 'EADDRINUSE') {
    return { exitCode: 2, line: `config error: PORT ${port} is already in use by another program: stop that program, or set PORT to a free port.` };
  }
  if (code === 'EACCES' && /listen/i.test(message)) {
    return { exitCode: 2, line: `config error: PORT ${port} needs privileges this process does not have: set PORT to 1024 or above (default 3000).` };
  }
  return { exitCode: 1, line: `hermes could not start: ${message}` };
}
