import type { Logger } from 'pino';
import type { Conversation, Speaker } from '../basics/types.js';
import { conversationKey } from '../basics/types.js';
import type { StopTurnResult } from '../basics/ports.js';
import type { RunningTurn } from './turn-driver.js';
import * as say from './user-messages.js';
import type { StopReason } from './stop-reason.js';

/**
 * The one way a running turn is stopped on someone's behalf: the Stop button, `/hermes stop`, and
 * (HERMES_BUSY_MODE=interrupt) a new message. Only the turn's requester or an admin may stop it.
 *
 * Stopping aborts the turn's signal with a StopReason. That one signal reaches everything the
 * turn runs: the model stream (the provider aborts its request), a running tool (run_code's
 * sandbox is killed, fetch_url's request aborted) and its sub-agents (they run on the same
 * signal), so the turn ends within moments, not at its next step. The turn driver reads the
 * reason to say who stopped it on the answer being written.
 *
 * A turn running on another instance (a shared PostgreSQL database) is asked to stop through the
 * work queue; who may stop it is then decided from the requester the button names.
 */
export interface TurnStopperDeps {
  /** The turn running here in a conversation (by conversation key). */
  runningIn(key: string): RunningTurn | undefined;
  /** The turn running here with this id. */
  runningTurn(turnId: string): RunningTurn | undefined;
  /** Asks another instance running the lane to stop it; true when one was asked. */
  stopElsewhere(lane: string): Promise<boolean>;
  isAdmin(s: Speaker): boolean;
  mention(c: Conversation, userId: string): string;
  log: Logger;
}

export interface StopRequest {
  conversation: Conversation;
  by: Speaker;
  via: StopReason['via'];
  /** A button names its turn: an older turn's button never stops a newer one here. */
  turnId?: string;
  /** The requester the button names (used only when the turn runs on another instance). */
  requesterId?: string;
}

export interface TurnStopper {
  stop(req: StopRequest): Promise<StopTurnResult>;
}

export function createTurnStopper(deps: TurnStopperDeps): TurnStopper {
  const mayStop = (by: Speaker, requesterId: string) => by.userId === requesterId || deps.isAdmin(by);

  return {
    async stop(req) {
      const key = conversationKey(req.conversation);
      const here = req.turnId !== undefined ? deps.runningTurn(req.turnId) : deps.runningIn(key);
      // Stopped already, and ending: a second click changes nothing.
      if (here?.controller.signal.aborted) return { kind: 'not_running', text: say.TURN_ALREADY_ENDED };
      if (here) {
        const requester = here.state.speaker;
        if (!mayStop(req.by, requester.userId)) return { kind: 'not_allowed', text: say.onlyRequesterMayStop(deps.mention(req.conversation, requester.userId)) };
        const reason: StopReason = { kind: 'stopped', by: req.by, via: req.via };
        here.controller.abort(reason);
        deps.log.info({ turnId: here.state.turnId, via: req.via }, 'turn stopped on request');
        return { kind: 'stopped' };
      }
      // A button whose turn runs nowhere here: it may run on another instance, in this lane.
      if (req.turnId !== undefined && deps.runningIn(key)) return { kind: 'not_running', text: say.TURN_ALREADY_ENDED };
      const requesterId = req.requesterId;
      if (requesterId !== undefined && !mayStop(req.by, requesterId)) return { kind: 'not_allowed', text: say.onlyRequesterMayStop(deps.mention(req.conversation, requesterId)) };
      const asked = await deps.stopElsewhere(key).catch((err: Error) => {
        deps.log.warn({ err: err.message }, 'could not ask another instance to stop a turn');
        return false;
      });
      return asked ? { kind: 'stopped' } : { kind: 'not_running', text: req.turnId !== undefined ? say.TURN_ALREADY_ENDED : say.NOTHING_RUNNING };
    },
  };
}
