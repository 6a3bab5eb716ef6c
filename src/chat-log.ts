import pino from 'pino';

/**
 * Where logs go while the terminal chat runs in a terminal: every record to a file (JSON lines),
 * and warnings and worse also to `notice`, as level + message, for the chat to show as one short
 * line between its own lines. Log lines are never written into the conversation.
 */
export function chatLogDestination(
  file: string,
  level: string,
  notice: (level: 'warn' | 'error' | 'fatal', msg: string) => void,
): pino.MultiStreamRes {
  // Synchronous: a terminal chat logs little, and a record must be in the file when a person looks.
  const toFile = pino.destination({ dest: file, mkdir: true, sync: true });
  const toChat = {
    write(line: string) {
      try {
        const rec = JSON.parse(line) as { level?: number; msg?: unknown };
        const name = (rec.level ?? 40) >= 60 ? 'fatal' : (rec.level ?? 40) >= 50 ? 'error' : 'warn';
        notice(name, String(rec.msg ?? ''));
      } catch {
        /* not a JSON record: the file has it */
      }
    },
  };
  const streams: pino.StreamEntry[] = [{ level: level as pino.Level, stream: toFile }];
  if (level !== 'silent') streams.push({ level: 'warn', stream: toChat });
  return pino.multistream(streams);
}
