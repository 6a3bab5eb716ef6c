/**
 * Bolt and the WebClient log through their own Logger interface; this routes them into our pino
 * logger so there is one stream with one redaction policy. Their debug output (request dumps) is
 * demoted to pino's trace level so LOG_LEVEL=debug stays readable.
 */
import type { Logger as SlackLogger } from '@slack/bolt';
import { LogLevel } from './bolt.js';
import type { Logger } from '../../src/basics/log.js';

export function toSlackLogger(log: Logger): SlackLogger {
  const text = (msg: unknown[]): string => msg.map((m) => (typeof m === 'string' ? m : m instanceof Error ? m.message : JSON.stringify(m))).join(' ').slice(0, 2000);
  let level: LogLevel = LogLevel.INFO;
  return {
    // The WebClient logs four debug lines per call; their text is only put together when it is printed.
    debug: (...msg: unknown[]) => {
      if (log.isLevelEnabled('trace')) log.trace({ lib: 'slack' }, text(msg));
    },
    info: (...msg: unknown[]) => {
      if (log.isLevelEnabled('debug')) log.debug({ lib: 'slack' }, text(msg));
    },
    warn: (...msg: unknown[]) => log.warn({ lib: 'slack' }, text(msg)),
    error: (...msg: unknown[]) => log.error({ lib: 'slack' }, text(msg)),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
