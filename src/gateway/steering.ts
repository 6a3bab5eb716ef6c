import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { Conversation, InboundMessage } from '../basics/types.js';
import type { OutboundPort } from '../basics/ports.js';
import type { OpenedDatabase } from '../state/store/database.js';
import { removeWaiting, rewriteWaiting, waitingInLane } from '../state/cluster/lane-waiting.js';
import type { BusyMode } from '../settings/busy-mode.js';

/**
 * Steering: a message that arrives while its conversation's turn runs is added to that turn before
 * its next model call, instead of waiting for a turn of its own (HERMES_BUSY_MODE=steer).
 *
 * The message was accepted like any other (a work row in the conversation's lane, behind the
 * running one), and it stays that row until the turn that took it in ends:
 * 1. the running turn finds the row waiting in its lane (state/cluster/lane-waiting.ts), appends
 *    the message to the session, marks it seen on the platform, and rewrites the row as `takenIn`;
 * 2. when the turn's job ends, the rows it took in are removed: their answer was the turn's answer.
 * A crash (or shutdown) before 2 leaves the rows: each then runs as its own turn, and one marked
 * `takenIn` is answered without appending its message again, so no steering message is lost or
 * doubled. (A crash between appending and rewriting the row can double one message in the history;
 * the other order could lose it.)
 */
export interface SteeringDeps<J> {
  database: OpenedDatabase;
  clock: Clock;
  log: Logger;
  /** The busy mode in force in a conversation (HERMES_BUSY_MODE, a channel policy's `busy_mode`). */
  busyMode(conversation: Conversation): BusyMode;
  portFor(c: Conversation): OutboundPort | undefined;
  /** The message of a waiting job, if the job is a user message that can be taken in. */
  messageOf(job: J): { message: InboundMessage; takenIn: boolean } | undefined;
  /** The job marked as taken in (its message is in the session now). */
  markTakenIn(job: J): J;
  /** Appends the message to the running turn's session, as its turn would (files saved, author tagged). */
  append(message: InboundMessage, sessionId: string): Promise<void>;
  /** The work queue's word on whether a row of the lane may be waiting (absent: always look). */
  mayHaveWaiting?(lane: string): boolean;
  /** Told how many waiting rows of a lane were removed once their messages were answered. */
  removedWaiting?(lane: string, n: number): void;
}

export interface Steering {
  /** A job of `lane` starts running here as row `rowId`; the returned handle ends it. */
  open(lane: string, rowId: string): SteeringJob;
  /** The hook a turn of `lane` calls before each model call (absent when no job of the lane runs here). */
  hookFor(lane: string, sessionId: string): (() => Promise<void>) | undefined;
}

export interface SteeringJob {
  /** The job ended: `done` removes the rows it took in; `cut_off` (shutdown, lost claim) keeps them for the next run. */
  close(how: 'done' | 'cut_off'): Promise<void>;
}

export function createSteering<J>(deps: SteeringDeps<J>): Steering {
  const { log } = deps;
  const jobs = new Map<string, { rowId: string; takenIn: Set<string> }>();

  async function takeIn(lane: string, sessionId: string): Promise<void> {
    const job = jobs.get(lane);
    if (!job || deps.mayHaveWaiting?.(lane) === false) return;
    const waiting = await waitingInLane<J>(deps.database, lane, 'turn', job.rowId, deps.clock.now());
    for (const row of waiting) {
      if (job.takenIn.has(row.id)) continue;
      const found = deps.messageOf(row.job);
      // Rows keep their order: a message that is not taken in holds back the ones after it.
      if (!found || deps.busyMode(found.message.conversation) !== 'steer') return;
      if (!found.takenIn) {
        await deps.append(found.message, sessionId);
        if (!(await rewriteWaiting(deps.database, row.id, deps.markTakenIn(row.job)))) {
          log.warn({ lane, id: row.id }, 'steering: a message taken into the running turn was claimed meanwhile');
          continue;
        }
        markSeen(found.message);
        log.info({ lane, id: row.id }, 'steering: a message sent while the turn ran was added to it');
      }
      job.takenIn.add(row.id);
    }
  }

  function markSeen(msg: InboundMessage): void {
    const port = deps.portFor(msg.conversation);
    if (!port?.markSeen || !msg.replyTo) return;
    port.markSeen(msg.conversation, msg.replyTo).catch((err: Error) => log.warn({ err: err.message, platform: msg.conversation.platform }, 'steering: could not mark the message seen'));
  }

  return {
    open(lane, rowId) {
      const job = { rowId, takenIn: new Set<string>() };
      jobs.set(lane, job);
      return {
        async close(how) {
          if (jobs.get(lane) === job) jobs.delete(lane);
          if (how === 'cut_off' || job.takenIn.size === 0) return;
          await removeWaiting(deps.database, [...job.takenIn]).then(
            (n) => deps.removedWaiting?.(lane, n),
            (err: Error) => log.error({ err: err.message, lane }, 'steering: could not remove messages the turn answered; they will be answered again'),
          );
        },
      };
    },
    hookFor(lane, sessionId) {
      if (!jobs.has(lane)) return undefined;
      // Steering is a courtesy to the running turn: when it fails the messages stay queued for their own turns.
      return () => takeIn(lane, sessionId).catch((err: Error) => log.error({ err: err.message, lane }, 'steering: could not add waiting messages to the running turn'));
    },
  };
}
