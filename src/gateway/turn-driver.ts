import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import { StoreWriteError } from '../state/store/store.js';
import type { PausedTurns } from '../state/approvals/paused-turns.js';
import type { Conversation } from '../basics/types.js';
import { conversationKey } from '../basics/types.js';
import type { SessionStore } from '../state/sessions/session-store.js';
import type { ApprovalRecord } from '../state/approvals/approval-store.js';
import type { TurnDeps, TurnEnd, TurnState } from '../agent/turn-runner.js';
import { runSteps } from '../agent/turn-runner.js';
import { budgetStopped } from '../basics/model-notes.js';
import type { Gatekeeper } from './access/gatekeeper.js';
import { withHeader } from '../state/schedules/schedule-text.js';
import type { AnswerStream, OutboundPort } from '../basics/ports.js';
import { answerSink, type AnswerSink } from './answer-sink.js';
import { startProgress } from './progress.js';
import { startStatusLine } from './status-line.js';
import * as say from './user-messages.js';
import type { IndexedMessage, MessageIndex, SearchRow } from '../state/recall/message-index.js';
import { isStopReason } from './stop-reason.js';

/**
 * Runs a turn in the slot the gateway gave it and tells the person how it ended: the working
 * indicator and sub-agent notes while it runs, the answer or a clear failure after, the pause
 * stored before its approval prompt is shown. Knows nothing of queues, dedupe or commands.
 */
export interface TurnDriverDeps {
  turn: TurnDeps;
  /** Where a turn waiting on an approval keeps its state (hermes_paused_turn). */
  pausedTurns: PausedTurns<TurnState>;
  sessions: SessionStore;
  access: Gatekeeper;
  clock: Clock;
  log: Logger;
  progressDelayMs?: number;
  /** Answers shown as they are written where the platform can (HERMES_STREAMING); default off. */
  streaming?: boolean;
  portFor(c: Conversation): OutboundPort | undefined;
  /** Posts the approval prompt of a turn that paused (the approval flow). */
  showApproval(record: ApprovalRecord): Promise<void>;
  /** Keeps accepted messages and answers for search_conversations. */
  recall?: Pick<MessageIndex, 'record' | 'searchRow'>;
}

/** How a driven turn came out, for callers that wait on it (scheduled runs). */
export type DriveEnd = TurnEnd['kind'] | 'error' | 'not_started';

export interface TurnDriver {
  /**
   * Runs (or resumes) a turn; `before` may decline to start it once its signal exists;
   * `beforeModelCall` adds messages that arrived meanwhile (steering.ts).
   */
  drive(state: TurnState, before?: (signal: AbortSignal) => Promise<boolean>, beforeModelCall?: () => Promise<void>): Promise<DriveEnd>;
  /** Posts text in a conversation; a failure is logged, never thrown (the user already waits). */
  send(c: Conversation, text: string, replyTo?: string): Promise<void>;
  /** The turn running in a conversation (by conversation key), to stop it. */
  runningIn(key: string): RunningTurn | undefined;
  /** The turn running here with this id (a Stop button names it). */
  runningTurn(turnId: string): RunningTurn | undefined;
  /** Stops every running turn (shutdown). */
  abortAll(): void;
  /**
   * The search row of a message, for its history append to carry (the one way messages reach the
   * index: the gateway's accepted message, and the answer here); undefined when search is off or
   * the message is not kept for it.
   */
  searchRow(m: IndexedMessage): SearchRow | undefined;
}

/** A turn running in this process: its cancel switch and whose it is. */
export interface RunningTurn {
  controller: AbortController;
  state: TurnState;
}

export function createTurnDriver(deps: TurnDriverDeps): TurnDriver {
  const { log } = deps;
  const running = new Map<string, RunningTurn>();
  const byTurnId = new Map<string, RunningTurn>();

  const searchRow = (m: IndexedMessage): SearchRow | undefined => deps.recall?.searchRow(m);

  /** The answer as search finds it later: written by the bot, in the DM (if any) of the person it answered. */
  function answerEntry(state: TurnState, text: string): IndexedMessage {
    return { id: `${state.conversation.platform}:answer:${state.turnId}`, conversation: state.conversation, author: 'bot', dmOwner: state.speaker, text, at: deps.clock.now() };
  }

  /** An answer whose append carried no search row is indexed on its own. A failure is logged: search is worse off, the turn is not. */
  async function indexAnswer(state: TurnState, text: string): Promise<void> {
    try {
      await deps.recall?.record(answerEntry(state, text));
    } catch (err) {
      log.warn({ err: (err as Error).message, platform: state.conversation.platform }, 'recall: a message could not be indexed for search');
    }
  }

  /** `feedbackFor`: the text is this turn's final answer (its last message gets feedback buttons). */
  async function send(c: Conversation, text: string, replyTo?: string, feedbackFor?: string): Promise<void> {
    const port = deps.portFor(c);
    if (!port) {
      log.error({ platform: c.platform }, 'no adapter registered for platform; answer dropped');
      return;
    }
    try {
      await port.sendText(c, text, { replyTo, ...(feedbackFor !== undefined && { feedbackFor }) });
      if (c.threadId) await deps.sessions.markJoined(c);
    } catch (err) {
      log.error({ err: (err as Error).message, platform: c.platform }, 'sending an answer failed');
    }
  }

  /** A turn's final post; a scheduled run's starts with its header, and says when the run failed. */
  function sendEnd(state: TurnState, text: string, failed: boolean): Promise<void> {
    return send(state.conversation, state.header ? withHeader(state.header, text, failed) : text, state.replyTo);
  }

  /** The answer shown while it is written, where the platform can and the turn is a plain one. */
  function openStream(state: TurnState, port: OutboundPort | undefined): { answer: AnswerStream; sink: AnswerSink } | undefined {
    // A scheduled run's posts start with its header, which a stream cannot put first.
    if (!deps.streaming || !port?.openAnswer || state.header) return undefined;
    const answer = port.openAnswer(state.conversation, { replyTo: state.replyTo, recipientId: state.speaker.userId, turnId: state.turnId });
    return { answer, sink: answerSink(answer, (names) => `running ${names.join(', ')}`) };
  }

  /**
   * The streamed answer's end: the final text where it was written, or (when the platform could
   * not take it) posted the ordinary way, so no answer is lost; any other end closes the stream
   * and is told as usual.
   */
  async function closeStream(stream: { answer: AnswerStream; sink: AnswerSink }, state: TurnState, end: TurnEnd | undefined, note?: string): Promise<boolean> {
    if (end?.kind === 'answered' && end.text) {
      try {
        await stream.answer.finish(stream.sink.document(end.text));
        if (state.conversation.threadId) await deps.sessions.markJoined(state.conversation);
        return true;
      } catch (err) {
        log.warn({ err: (err as Error).message, platform: state.conversation.platform }, 'finishing the streamed answer failed; posting it instead');
      }
    }
    await stream.answer.end(note);
    return false;
  }

  /** Why a stopped turn ended, as the answer being written says it ("Stopped by @ann"). */
  function stopNote(state: TurnState, signal: AbortSignal): string | undefined {
    if (!isStopReason(signal.reason)) return undefined;
    const port = deps.portFor(state.conversation);
    return say.stoppedBy(port ? port.mention(signal.reason.by.userId) : (signal.reason.by.displayName ?? signal.reason.by.userId));
  }

  async function finish(state: TurnState, end: TurnEnd, stream?: { answer: AnswerStream; sink: AnswerSink }, signal?: AbortSignal, indexed = false): Promise<void> {
    if (end.kind === 'answered' && end.text && !indexed) await indexAnswer(state, end.text);
    const note = end.kind === 'aborted' && signal ? stopNote(state, signal) : undefined;
    if (stream && (await closeStream(stream, state, end, note))) {
      traceEnd(state, end);
      if (state.paused) await deps.pausedTurns.delete(state.turnId);
      return;
    }
    traceEnd(state, end);
    if (end.kind === 'paused') {
      state.paused = true;
      await deps.pausedTurns.save(state.turnId, state.sessionId, state);
      await deps.showApproval(end.approval);
      return;
    }
    if (state.paused) await deps.pausedTurns.delete(state.turnId);
    if (end.kind === 'budget_exhausted') {
      deps.access.traceRefusal(state.speaker, { reason: 'daily_tokens', usage: end.usage }, 'turn', state.conversation);
      await deps.sessions.append(state.sessionId, [{ role: 'user', content: `[system note] ${budgetStopped(end.usage.scope)}` }]);
      await sendEnd(state, say.budgetStopped(end.usage, state.stepsUsed, deps.clock.now()), true);
    }
    if (end.kind === 'answered') {
      if (end.text) await send(state.conversation, state.header ? withHeader(state.header, end.text, false) : end.text, state.replyTo, state.turnId);
      else await sendEnd(state, say.EMPTY_ANSWER, true);
    }
    else if (end.kind === 'step_limit') await sendEnd(state, say.stepLimitReached(deps.turn.limits.maxSteps), true);
    else if (end.kind === 'model_error') await sendEnd(state, say.modelFailed(end.error), true);
  }

  // Traced before the user sees the answer, so `/hermes status` right after it counts this turn.
  // A pause is not an end: the turn's one turn_end comes when it finishes after the decision.
  function traceEnd(state: TurnState, end: TurnEnd): void {
    if (end.kind !== 'paused') deps.turn.tracer.record({ type: 'turn_end', turnId: state.turnId, outcome: end.kind === 'model_error' ? `model_error:${end.error.kind}` : end.kind, steps: state.stepsUsed, durationMs: deps.clock.now() - state.startedAt, promptTokens: state.promptTokens, completionTokens: state.completionTokens });
  }

  async function drive(state: TurnState, before?: (signal: AbortSignal) => Promise<boolean>, beforeModelCall?: () => Promise<void>): Promise<DriveEnd> {
    const key = conversationKey(state.conversation);
    const controller = new AbortController();
    const entry: RunningTurn = { controller, state };
    running.set(key, entry);
    byTurnId.set(state.turnId, entry);
    const port = deps.portFor(state.conversation);
    const progress = startProgress(port, state.conversation, state.replyTo, { delayMs: deps.progressDelayMs ?? 0, clock: deps.clock, log });
    const notes = startStatusLine(port, state.conversation, state.replyTo, { clock: deps.clock, log });
    let stream: { answer: AnswerStream; sink: AnswerSink } | undefined;
    try {
      if (before && !(await before(controller.signal))) return 'not_started';
      stream = openStream(state, port);
      const shown = stream?.sink ?? {
        toolsStarting: (names: string[]) => {
          port?.showProgress?.(state.conversation, `running ${names.join(', ')}`).catch(() => undefined);
        },
        progress: (note: string) => notes.show(note),
      };
      // The answer's search row rides on the answer's own append (one statement), not after it.
      let indexed = false;
      const answerRow = (text: string) => {
        indexed = true;
        return searchRow(answerEntry(state, text));
      };
      const end = await runSteps(deps.turn, state, controller.signal, { ...shown, answerRow, ...(beforeModelCall && { beforeModelCall }) });
      await finish(state, end, stream, controller.signal, indexed);
      return end.kind;
    } catch (err) {
      log.error({ err: (err as Error).message, stack: (err as Error).stack, turnId: state.turnId }, 'turn failed');
      await stream?.answer.end();
      await sendEnd(state, err instanceof StoreWriteError ? say.STORE_FAILED : say.UNEXPECTED_ERROR, true);
      deps.turn.tracer.record({ type: 'turn_end', turnId: state.turnId, outcome: 'error', steps: state.stepsUsed, durationMs: deps.clock.now() - state.startedAt, promptTokens: state.promptTokens, completionTokens: state.completionTokens });
      return 'error';
    } finally {
      if (running.get(key) === entry) running.delete(key);
      if (byTurnId.get(state.turnId) === entry) byTurnId.delete(state.turnId);
      await progress.stop();
      await notes.stop();
    }
  }

  return {
    drive,
    send,
    searchRow,
    runningIn: (key) => running.get(key),
    runningTurn: (turnId) => byTurnId.get(turnId),
    abortAll: () => {
      for (const t of running.values()) t.controller.abort();
    },
  };
}
