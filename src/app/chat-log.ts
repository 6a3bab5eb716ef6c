import pino from 'pino';

/**
 * Where logs go while the terminal chat runs in a terminal: every record to a file (JSON lines),
 * and warnings and worse also to `notice`, as level + message, for the chat to show as one short
 * line between its own lines. Log lines are never written into the conversation. A plain stream
 * (the logger filters by level and redacts before it), reading the level from the line itself.
 */
export function chatLogDestination(
  file: string,
  level: string,
  notice: (level: 'warn' | 'error' | 'fatal', msg: string) => void,
): pino.DestinationStream {
  // Synchronous: a terminal chat logs little, and a record must be in the file when a person looks.
  const toFile = pino.destination({ dest: file, mkdir: true, sync: true });
  return {
    write(line: string) {
      toFile.write(line);
      if (level === 'silent') return;
      try {
        const rec = JSON.parse(line) as { level?: number; msg?: unknown };
        const n = rec.level ?? 0;
        if (n >= 40) notice(n >= 60 ? 'fatal' : n >= 50 ? 'error' : 'warn', String(rec.msg ?? ''));
      } catch {
        /* not a JSON record: the file has it */
      }
    },
  };
}
