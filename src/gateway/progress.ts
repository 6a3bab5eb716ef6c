import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { Conversation } from '../basics/types.js';
import type { OutboundPort } from '../basics/ports.js';

/**
 * The "working on it" indicator of one turn. It appears only once the turn has run for
 * `delayMs`: a quick answer needs no spinner, and Slack rate-limits reactions (~50 per minute),
 * so indicators for sub-second turns would cost real API budget for nothing. Once shown it is
 * always cleared, also when the turn failed, and also when showing it raced with the end.
 */
export function startProgress(port: OutboundPort | undefined, conversation: Conversation, replyTo: string | undefined, opts: { delayMs: number; clock: Clock; log: Logger }): { stop(): Promise<void> } {
  if (!port) return { stop: async () => undefined };
  let ended = false;
  let shown: Promise<(() => Promise<void>) | undefined> | undefined;

  const show = () => {
    shown = port.startWorking(conversation, { replyTo }).catch((err: Error) => {
      opts.log.warn({ err: err.message }, 'progress indicator failed');
      return undefined;
    });
  };
  const cancelTimer = opts.delayMs > 0 ? opts.clock.setTimer(() => !ended && show(), opts.delayMs) : (show(), () => undefined);

  return {
    async stop() {
      ended = true;
      cancelTimer();
      const clear = await shown;
      await clear?.().catch((err: Error) => opts.log.warn({ err: err.message }, 'clearing progress indicator failed'));
    },
  };
}
