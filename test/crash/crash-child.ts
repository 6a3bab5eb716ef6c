/**
 * A real process for crash-handlers.e2e.test.ts: the production crash handlers, a real tracer, then
 * a throw from a timer (an uncaught exception). argv[2] is the trace directory.
 */
import pino from 'pino';
import { installCrashHandlers } from '../../src/app/crash-handlers.js';
import { createTracer } from '../../src/runtime/trace/tracer.js';

const log = pino({ level: 'info' }, pino.destination({ fd: 1, sync: true }));
const tracer = createTracer({ dir: process.argv[2]!, log, redact: (v) => JSON.stringify(v) });
installCrashHandlers(process, { log, flush: () => tracer.flush(), exit: (code) => process.exit(code) });

tracer.record({ type: 'turn_start', turnId: 'before-the-crash', sessionId: 's', platform: 'shell', userKey: 'u', text: 'hello' });
setTimeout(() => {
  throw new Error('boom from a timer');
}, 10);
// Kept alive like a server would be: only the handler's exit ends this process.
setInterval(() => log.info('still running'), 50);
