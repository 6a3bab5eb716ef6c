import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { Conversation } from '../basics/types.js';
import type { MessageRef, OutboundPort } from '../basics/ports.js';

/**
 * Notes about what a turn's sub-agents are doing ("researcher: fetch_url"), where the person can
 * read them. The terminal prints each note as a line (`showProgress`). On Slack and Discord the
 * working indicator (a reaction, "typing…") carries no text, so there the turn gets one status
 * message of its own (`statusMessages`): posted at the first note, edited to the latest one,
 * deleted when the turn ends, also after errors.
 *
 * Invariants: at most one message per turn; at most one write per `minIntervalMs` (notes in between
 * are coalesced and the latest is always shown); writes go one after another, so an edit never
 * overtakes the post or lands after the delete; a failed write is logged and never fails the turn
 * (a failed post means no status message this turn, and no further tries).
 */
export interface StatusLine {
  show(note: string): void;
  /** Ends the line: pending notes are dropped, a posted message is deleted. Never throws. */
  stop(): Promise<void>;
}

/** Chat edits are rate-limited (Slack chat.update ~50/min per workspace); sub-agent steps take seconds anyway. */
export const STATUS_EDIT_INTERVAL_MS = 2000;

const NONE: StatusLine = { show: () => undefined, stop: async () => undefined };

export function startStatusLine(
  port: Pick<OutboundPort, 'showProgress' | 'statusMessages'> | undefined,
  conversation: Conversation,
  replyTo: string | undefined,
  opts: { clock: Clock; log: Pick<Logger, 'warn'>; minIntervalMs?: number },
): StatusLine {
  if (port?.showProgress) {
    const print = port.showProgress.bind(port);
    return { show: (note) => void print(conversation, note).catch(() => undefined), stop: NONE.stop };
  }
  const messages = port?.statusMessages;
  if (!messages) return NONE;
  const interval = opts.minIntervalMs ?? STATUS_EDIT_INTERVAL_MS;
  const warn = (what: string) => (err: Error) => opts.log.warn({ err: err.message }, `status message: ${what} failed`);

  let posted: Promise<MessageRef | undefined> | undefined;
  let writes: Promise<unknown> = Promise.resolve();
  let wanted: string | undefined;
  let shown: string | undefined;
  let lastWriteAt = 0;
  let cancelTimer: (() => void) | undefined;
  let ended = false;

  const write = () => {
    cancelTimer = undefined;
    const text = wanted;
    if (ended || text === undefined || text === shown) return;
    shown = text;
    lastWriteAt = opts.clock.now();
    if (!posted) {
      posted = messages.post(conversation, text, { replyTo }).catch((err: Error) => (warn('post')(err), undefined));
      writes = posted;
      return;
    }
    const ref = posted;
    writes = writes.then(async () => {
      const r = await ref;
      if (r !== undefined) await messages.edit(conversation, r, text).catch(warn('edit'));
    });
  };

  return {
    show(note) {
      if (ended) return;
      wanted = note;
      if (cancelTimer) return; // the scheduled write takes the latest note
      const wait = posted ? lastWriteAt + interval - opts.clock.now() : 0;
      if (wait <= 0) write();
      else cancelTimer = opts.clock.setTimer(write, wait);
    },
    async stop() {
      ended = true;
      cancelTimer?.();
      await writes;
      const ref = await posted;
      if (ref !== undefined) await messages.remove(conversation, ref).catch(warn('delete'));
    },
  };
}
