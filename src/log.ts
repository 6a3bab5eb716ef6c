import pino, { type Logger } from 'pino';

/**
 * Paths pino blanks out wherever they appear in a log object. Secrets also never reach traces
 * (see trace/redact.ts), and config objects are never logged whole.
 */
export const REDACT_PATHS = [
  'apiKey', '*.apiKey', 'token', '*.token', 'botToken', '*.botToken', 'appToken', '*.appToken',
  'signingSecret', '*.signingSecret', 'authorization', '*.authorization', 'Authorization', '*.Authorization',
  'headers.authorization', '*.headers.authorization', 'headers.Authorization', '*.headers.Authorization',
  'req.headers.authorization', 'password', '*.password', 'secret', '*.secret',
];

/** JSON lines in production; readable lines when NODE_ENV=development and pino-pretty is installed. */
export function createLogger(level = 'info', destination?: pino.DestinationStream, fd: 1 | 2 = 1): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { name: 'hermes' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (!destination && process.env.NODE_ENV === 'development') {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { destination: fd } } });
  }
  return pino(options, destination ?? pino.destination({ fd, sync: true }));
}

export type { Logger };
