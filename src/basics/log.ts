import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import { redactSecrets, REDACTED } from './safety/secrets.js';

/**
 * Paths pino blanks out wherever they appear in a log object. Every finished line is also passed
 * through the shared redactor (safety/secrets.ts), so a token inside a message or an error text
 * is caught too; config objects are never logged whole.
 */
export const REDACT_PATHS = [
  'apiKey', '*.apiKey', 'token', '*.token', 'botToken', '*.botToken', 'appToken', '*.appToken',
  'signingSecret', '*.signingSecret', 'authorization', '*.authorization', 'Authorization', '*.Authorization',
  'headers.authorization', '*.headers.authorization', 'headers.Authorization', '*.headers.Authorization',
  'req.headers.authorization', 'password', '*.password', 'secret', '*.secret',
];

/**
 * JSON lines in production; readable lines when NODE_ENV=development and pino-pretty is installed.
 * `knownSecrets`: the configured tokens, replaced verbatim whatever their shape.
 */
export function createLogger(level = 'info', destination?: pino.DestinationStream, fd: 1 | 2 = 1, knownSecrets: ReadonlyArray<string | undefined> = []): Logger {
  const options: pino.LoggerOptions = { level, base: { name: 'hermes' }, redact: { paths: REDACT_PATHS, censor: REDACTED } };
  let out = destination;
  if (!out && process.env.NODE_ENV === 'development') {
    // A stream, not a transport, so the redacting wrapper below sees the line before it is printed.
    const pretty = createRequire(import.meta.url)('pino-pretty') as (o: object) => pino.DestinationStream;
    out = pretty({ destination: fd, sync: true });
  }
  return pino(options, redactingStream(out ?? pino.destination({ fd, sync: true }), knownSecrets));
}

function redactingStream(inner: pino.DestinationStream, knownSecrets: ReadonlyArray<string | undefined>): pino.DestinationStream {
  // Matched inside JSON text, so escaped the way JSON.stringify writes them.
  const known = knownSecrets.filter((s): s is string => typeof s === 'string' && s.length >= 8).map((s) => JSON.stringify(s).slice(1, -1));
  const flushable = inner as pino.DestinationStream & { flushSync?: () => void; flush?: (cb?: (err?: Error) => void) => void };
  return {
    write: (line: string) => inner.write(redactSecrets(line, known)),
    // logger.flush() (e.g. on the way out after a crash) must still reach the real stream.
    ...(flushable.flushSync ? { flushSync: () => flushable.flushSync?.() } : {}),
    ...(flushable.flush ? { flush: (cb?: (err?: Error) => void) => flushable.flush?.(cb) } : {}),
  } as pino.DestinationStream;
}

export type { Logger };
