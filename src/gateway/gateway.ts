import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { Store } from '../state/store/store.js';
import { StoreWriteError } from '../state/store/store.js';
import type { ChatMessage, Conversation, ImageRef, InboundMessage, Platform, Speaker } from '../basics/types.js';
import { conversationKey, speakerKey } from '../basics/types.js';
import type { SessionStore } from '../state/sessions/session-store.js';
import type { ApprovalRecord, ApprovalStore } from '../state/approvals/approval-store.js';
import type { FactStore } from '../state/memory/fact-store.js';
import type { TurnDeps } from '../agent/turn-runner.js';
import { newTurnState, type TurnState } from '../agent/turn-runner.js';
import { tagUserText } from '../agent/system-prompt.js';
import type { ApprovalOutcome, CommandInvocation, CommandReply, DecisionResult, FeedbackResult, GatewayApi, OutboundPort, StopTurnResult } from '../basics/ports.js';
import type { WorkContext, WorkItem, WorkQueue } from '../state/cluster/work-queue.js';
import { isTimerJob, type TimerJob, type TimerRunner } from '../state/timers/timer-work.js';
import type { OpenedDatabase } from '../state/store/database.js';
import { fixedLimit, type LoadGovernor } from './load-governor.js';
import { createTurnDriver, type DriveEnd } from './turn-driver.js';
import { createInbox } from './inbox.js';
import { carryOverRound2 } from './carry-over.js';
import { clockOrderKey } from './order-key.js';
import { createApprovalFlow } from './approval-flow.js';
import { createPausedTurns } from '../state/approvals/paused-turns.js';
import { runCommand, type CommandDeps } from './command-handlers.js';
import { parseCommand } from './commands.js';
import * as say from './user-messages.js';
import type { ConversationContext } from './conversation-context.js';
import type { ScheduleStore } from '../state/schedules/schedule-store.js';
import type { ScheduledRun, ScheduledRunEnd } from '../state/schedules/schedule-runs.js';
import { scheduleSessionKey } from '../state/schedules/schedule-record.js';
import type { Gatekeeper, Refusal, Requester } from './access/gatekeeper.js';
import type { MessageIndex } from '../state/recall/message-index.js';
import type { ChannelNotes } from '../state/notes/channel-notes.js';
import type { PolicyBook } from '../settings/policy-book.js';
import { policyText } from './policy-text.js';
import { personListed } from '../settings/channel-policies.js';
import type { DailyUsage } from '../state/usage/usage-meter.js';
import { DEFAULT_BUSY_MODE, type BusyMode } from '../settings/busy-mode.js';
import { createSteering } from './steering.js';
import type { AuditLog } from '../state/audit/audit-log.js';
import { createTurnStopper, type StopRequest } from './turn-stop.js';
import type { StopReason } from './stop-reason.js';
import { createFeedbackStore } from '../state/feedback/feedback-store.js';
import { requestsFirst } from '../basics/requests-first.js';
import { rewriteHeld } from '../state/cluster/lane-waiting.js';

export interface GatewayDeps {
  store: Store;
  sessions: SessionStore;
  approvals: ApprovalStore;
  facts: FactStore;
  turn: TurnDeps;
  clock: Clock;
  log: Logger;
  admins: string[];
  /** HERMES_ALLOW, rate and daily tokens: asked before anything becomes a turn. */
  access: Gatekeeper;
  /** The append-only audit record: approvals, refusals, stops, commands (see docs/access-and-limits.md "Audit"). */
  audit: AuditLog;
  maxConcurrentTurns: number;
  /**
   * Adapts how many of those may run at once to the event loop's load (load-governor.ts), so a
   * busy process still acknowledges at once; absent → always maxConcurrentTurns.
   */
  governor?: LoadGovernor;
  /** How long a turn runs before the progress indicator shows (0 = at once). */
  progressDelayMs?: number;
  /** Answers shown as the model writes them (HERMES_STREAMING), where the platform can. */
  streaming?: boolean;
  /** Longest user message accepted; longer ones get a clear answer instead of a silent cut. */
  maxInboundChars?: number;
  status: CommandDeps['status'];
  /** Thread context and messages noted in joined threads; absent → the bot sees only what it is sent. */
  context?: ConversationContext;
  /** The operational tables (inbound dedupe, work). */
  database: OpenedDatabase;
  /** Every turn, approval resume, reminder and scheduled run goes through it; the gateway never knows which one it is. */
  work: WorkQueue<SessionJob>;
  /** Runs reminder and scheduled-run rows (src/state/timers/timer-work.ts); absent → they are left waiting. */
  timers?: TimerRunner;
  /** Scheduled tasks, for `/hermes schedules` and `unschedule`. */
  schedules?: ScheduleStore;
  /** Where accepted messages and answers are kept for search_conversations; absent → nothing is indexed. */
  recall?: Pick<MessageIndex, 'record' | 'searchRow'>;
  /** Channel notes (`/hermes notes`); absent → the command says they are not available. */
  notes?: ChannelNotes;
  /** Channel policies (hermes.config.yaml `channels:`): respond, approvers, `/hermes policy`. */
  policies?: PolicyBook;
  /** HERMES_DAILY_TOKENS (0 = none), for `/hermes policy`. */
  botDailyTokens?: number;
  /**
   * What a message that arrives while its conversation's turn runs does (steering.ts): asked per
   * conversation, so a channel policy can set its own; absent → steer.
   */
  busyMode?(conversation: Conversation): BusyMode;
  /** Saves a message's attached files into the session's workspace before its turn (files-and-code). */
  intake?(msg: InboundMessage, sessionId: string, port: OutboundPort | undefined): Promise<{ modelNote?: string; userNotice?: string; images?: ImageRef[] }>;
}

/** Session work as data, so any instance (or this one after a restart) can run it. */
export type SessionJob =
  /**
   * `takenIn`: a running turn already added the message to the session (steering.ts); answer it
   * without adding it again. `ownTurn`: such a message's own turn started (written on its row when
   * it does), so a later claim knows it was cut off; its question in the session says nothing then.
   */
  | { kind: 'message'; message: InboundMessage; takenIn?: boolean; ownTurn?: boolean }
  | { kind: 'resume'; approvalId: string; outcome: ApprovalOutcome; by?: Speaker }
  | TimerJob;

export interface Gateway extends GatewayApi {
  port(platform: Platform): OutboundPort | undefined;
  /**
   * Stops the turn running in a conversation on someone's behalf (requester or admin only):
   * the Stop button, `/hermes stop`, and a busy-mode interrupt all come through here.
   */
  stopRunning(req: StopRequest): Promise<StopTurnResult>;
  /** Re-queues work a crash or restart interrupted and re-arms approval expiry. Call once ports are registered. */
  recover(): Promise<void>;
  /** Resolves when no turn is queued or running. */
  idle(): Promise<void>;
  /** Turns queued or running across all conversations. */
  queueSize(): number;
  /** A private note to every admin (the bot-wide budget warning): a DM where the platform has one. */
  tellAdmins(text: string): Promise<void>;
  /** Runs one due time of a scheduled task as a turn of its creator; resolves when it ends or pauses. */
  runScheduled(run: ScheduledRun): Promise<ScheduledRunEnd>;
  close(): Promise<void>;
}

const DEFAULT_MAX_INBOUND = 40_000;

/**
 * Commands that only show something are not audited; every other one is (a command added later is
 * audited unless it is listed here). `stop` has its own kind, written by stopConversation.
 */
const UNAUDITED_COMMANDS: ReadonlySet<string> = new Set(['help', 'memory', 'status', 'schedules', 'stop']);

function auditedCommand(parsed: ReturnType<typeof parseCommand>): parsed is Extract<ReturnType<typeof parseCommand>, { kind: 'command' }> {
  return parsed.kind === 'command' && !UNAUDITED_COMMANDS.has(parsed.name);
}
/** How often an instance looks for approval requests it has no expiry timer for (posted elsewhere). */
const EXPIRY_WATCH_MS = 30_000;

export function createGateway(deps: GatewayDeps): Gateway {
  const ports = new Map<Platform, OutboundPort>();
  const governor = deps.governor ?? fixedLimit(deps.maxConcurrentTurns);
  const work = deps.work;
  const inbox = createInbox(deps.database, work, () => deps.clock.now());
  const log = deps.log;
  let closed = false;
  let cancelWatch: (() => void) | undefined;

  const isAdmin = (s: Speaker) => deps.admins.includes(`${s.platform}:${s.userId}`);
  const portFor = (c: Conversation) => ports.get(c.platform);

  const pausedTurns = createPausedTurns<TurnState>(deps.database, () => deps.clock.now());
  const turns = createTurnDriver({ ...deps, pausedTurns, portFor, showApproval: (r) => approvals.show(r) });
  const { send } = turns;
  const busyMode = (c: Conversation): BusyMode => deps.busyMode?.(c) ?? DEFAULT_BUSY_MODE;
  const steering = createSteering<SessionJob>({
    database: deps.database,
    clock: deps.clock,
    log,
    busyMode,
    portFor,
    messageOf: (job) => (job.kind === 'message' ? { message: job.message, takenIn: job.takenIn === true } : undefined),
    markTakenIn: (job) => ({ ...job, takenIn: true }),
    append: (msg, sessionId) => appendQuestion(msg, sessionId),
    mayHaveWaiting: (lane) => work.mayHaveWaiting(lane),
    removedWaiting: (lane, n) => work.removedWaiting(lane, n),
  });
  /** Every turn of a conversation's job listens for messages that steer it. */
  const drive: typeof turns.drive = (state, before) => turns.drive(state, before, steering.hookFor(conversationKey(state.conversation), state.sessionId));
  const stopper = createTurnStopper({
    runningIn: turns.runningIn,
    runningTurn: turns.runningTurn,
    stopElsewhere: (lane) => work.stopElsewhere(lane),
    isAdmin,
    mention: (c, userId) => portFor(c)?.mention(userId) ?? userId,
    log,
  });
  const feedback = createFeedbackStore(deps.database.db);

  /** The continuation of a decided approval: its id is the approval's, so it is never queued twice. */
  const resumeFor = (r: ApprovalRecord, outcome: ApprovalOutcome, by?: Speaker): WorkItem<SessionJob> => ({
    id: `resume:${r.id}`, kind: 'resume', lane: conversationKey(r.conversation), order: clockOrderKey(deps.clock.now(), r.id), job: { kind: 'resume', approvalId: r.id, outcome, by },
  });

  const approvals = createApprovalFlow({
    ...deps,
    pausedTurns,
    portFor,
    isAdmin,
    drive: async (state, before) => {
      await drive(state, before);
    },
    resumeLater: async (r, outcome, by) => {
      await work.add(resumeFor(r, outcome, by));
    },
    resumeIn: async (tx, r, outcome, by) => {
      await work.addIn(tx, resumeFor(r, outcome, by));
    },
    wake: (r) => work.wake(conversationKey(r.conversation)),
  });

  /** One job of a session, run by whichever worker claimed its row; messages that steer it end with it. */
  async function runJob(job: SessionJob, ctx: WorkContext): Promise<void | 'interrupted'> {
    // A job claimed now starts after the requests already read are acknowledged (requests-first.ts).
    await requestsFirst();
    // A reminder or a scheduled run: nobody's messages steer it.
    if (isTimerJob(job)) {
      if (deps.timers) return deps.timers(job, ctx);
      log.debug({ id: ctx.id }, 'a timer is due but timers are off here; it stays for a process that runs them');
      return 'interrupted';
    }
    const steered = steering.open(ctx.lane, ctx.id);
    let verdict: void | 'interrupted' = 'interrupted';
    try {
      verdict = await runSessionJob(job, ctx);
      return verdict;
    } finally {
      await steered.close(verdict === 'interrupted' ? 'cut_off' : 'done');
    }
  }

  async function runSessionJob(job: SessionJob, ctx: WorkContext): Promise<void | 'interrupted'> {
    if (job.kind === 'resume') {
      const result = await approvals.runJob(job.approvalId, job.outcome, job.by, ctx.startedBefore);
      if (result === 'interrupted') {
        const r = await deps.approvals.get(job.approvalId);
        if (r) await send(r.conversation, say.RESTART_INTERRUPTED, r.replyTo);
      }
      // A continuation cut off mid-run leaves its record 'running': the next claim reports it unknown.
      return ctx.signal.aborted ? 'interrupted' : undefined;
    }
    if (job.kind !== 'message') return;
    const msg = job.message;
    if (ctx.startedBefore && (await turnStarted(msg, job))) {
      // An instance that died (or shut down) was in this turn. Re-running could repeat side effects, so (as
      // after a restart) the history is repaired and the user is told. An approval the turn asked for
      // on its way out (its prompt perhaps never posted) is cancelled with it: the person is told to
      // send the message again, so a later click must not run the action and carry on a turn they
      // were told is over. (Requests of earlier turns were already superseded when this one began.)
      const session = await deps.sessions.current(msg.conversation);
      // Killed after the prompt was posted (only the row's end was lost), or a click decided the
      // request since: the turn goes on through the decision, whose continuation gives the answer.
      if ((await approvals.settleCutOffTurn(session.id, msg.id)) === 'goes_on') return;
      await send(msg.conversation, say.RESTART_INTERRUPTED, msg.replyTo);
      return;
    }
    if (job.takenIn === true && job.ownTurn !== true) {
      // The turn that took it in was cut off, so it is answered by a turn of its own, which is noted
      // on the row first: its question was in the session before, and a later claim must tell a
      // claim that never ran (answer it) from an own turn cut off (report it).
      await rewriteHeld(deps.database, ctx.id, { ...job, ownTurn: true }).catch((err: Error) => log.warn({ err: err.message, id: ctx.id }, 'could not note on its row that a taken-in message\'s own turn started'));
    }
    const key = conversationKey(msg.conversation);
    // Losing the claim (this instance stalled) or shutting down stops the turn here.
    const stop = () => turns.runningIn(key)?.controller.abort();
    ctx.signal.addEventListener('abort', stop, { once: true });
    try {
      const end = await processMessage(msg, job.takenIn === true);
      return end === 'aborted' && ctx.signal.aborted ? 'interrupted' : undefined;
    } finally {
      ctx.signal.removeEventListener('abort', stop);
    }
  }

  /** Whether the message's turn had started: its question in the session, or for one taken into another turn, its row's note. */
  async function turnStarted(msg: InboundMessage, job: { takenIn?: boolean; ownTurn?: boolean }): Promise<boolean> {
    if (job.takenIn === true) return job.ownTurn === true;
    const session = await deps.sessions.current(msg.conversation);
    const recent = await deps.sessions.history(session.id);
    return recent.some((m) => m.role === 'user' && m.inboundId === msg.id);
  }

  /**
   * The message as the session stores it: its files saved into the workspace (the model is told
   * of them, images travel as references), shared conversations tagged with the verified author.
   */
  /** The search index's id of an accepted message. */
  const messageIdOf = (msg: InboundMessage) => `${msg.conversation.platform}:${msg.id}`;

  /**
   * A person's message enters the session and (the one place they are indexed) the search index,
   * in one statement: the append carries its search row (schema step 0013).
   */
  async function appendQuestion(msg: InboundMessage, sessionId: string): Promise<void> {
    const row = turns.searchRow({ id: messageIdOf(msg), conversation: msg.conversation, author: msg.speaker, text: msg.text, at: msg.at ?? deps.clock.now() });
    await deps.sessions.append(sessionId, [await userEntry(msg, sessionId)], row && { searchRow: row.json });
    row?.written();
  }

  /** A person's message as it enters the session. */
  async function userEntry(msg: InboundMessage, sessionId: string): Promise<ChatMessage> {
    const files = msg.attachments?.length && deps.intake ? await deps.intake(msg, sessionId, portFor(msg.conversation)) : undefined;
    if (files?.userNotice) await send(msg.conversation, files.userNotice, msg.replyTo);
    const said = msg.text.trim() === '' ? '(sent only files)' : msg.text;
    const text = files?.modelNote ? `${said}\n\n${files.modelNote}` : said;
    // Attached images travel as references (src/runtime/vision): the model is shown them if it can see.
    return { role: 'user', content: tagUserText(msg.conversation, msg.speaker, text), speaker: msg.speaker, inboundId: msg.id, ...(files?.images && { images: files.images }) };
  }

  /**
   * The message starts the thread it is in and is answered there (a Slack mention at a channel's
   * top level): its conversation has no session yet, so the session store tries the start first.
   * Only a guess about cost: a wrong one costs the read it saved.
   */
  const opensThread = (msg: InboundMessage): boolean => msg.conversation.threadId !== undefined && msg.conversation.threadId === msg.replyTo && msg.hasEarlier !== true;

  /** The queued job for one user message; `takenIn`: a turn cut off by a crash had already added it to the session. */
  async function processMessage(msg: InboundMessage, takenIn: boolean): Promise<DriveEnd> {
    let release: (() => void) | undefined;
    try {
      // The bot is about to answer in this thread: from now on it is part of it.
      const session = await deps.sessions.current(msg.conversation, { join: msg.conversation.threadId !== undefined, opens: opensThread(msg) });
      // This job holds the conversation's lane: no other instance writes the session until it ends.
      release = deps.sessions.hold(session);
      // A session this call created has no history and no approvals: nothing to supersede or repair.
      const history: readonly ChatMessage[] = session.created ? [] : await approvals.supersedeAndRepair(session.id);
      if (deps.context && !takenIn) {
        // Messages are noted only in joined threads (accepts): none outside a thread, nor in one never
        // joined before this turn looked (session-store.ts `neverJoined`; a join is never undone).
        const noted = msg.conversation.threadId !== undefined && session.neverJoined !== true;
        const gathered = await deps.context.gather(msg, async () => history, portFor(msg.conversation), { noted });
        if (gathered.userNote) await send(msg.conversation, gathered.userNote, msg.replyTo);
        if (gathered.messages.length) await deps.sessions.append(session.id, gathered.messages);
        await deps.context.clearNoted(msg, gathered.notedIds);
      }
      if (!takenIn) await appendQuestion(msg, session.id);
      const state = newTurnState({ sessionId: session.id, conversation: msg.conversation, speaker: msg.speaker, isAdmin: isAdmin(msg.speaker), replyTo: msg.replyTo, messageId: messageIdOf(msg) }, deps.clock.now());
      deps.turn.tracer.record({ type: 'turn_start', turnId: state.turnId, sessionId: session.id, platform: msg.conversation.platform, userKey: speakerKey(msg.speaker), text: msg.text });
      return await drive(state);
    } catch (err) {
      log.error({ err: (err as Error).message }, 'could not start a turn');
      await send(msg.conversation, err instanceof StoreWriteError ? say.STORE_FAILED : say.UNEXPECTED_ERROR, msg.replyTo);
      return 'error';
    } finally {
      release?.();
    }
  }

  const withoutReceipt = ({ receipt: _receipt, ...msg }: InboundMessage): InboundMessage => msg;

  /** The work row that answers a message: in its conversation's lane, at the platform's place for it. */
  function turnFor(msg: InboundMessage): WorkItem<SessionJob> {
    return {
      id: `msg:${msg.conversation.platform}:${msg.id}`,
      kind: 'turn',
      lane: conversationKey(msg.conversation),
      order: msg.order ?? clockOrderKey(deps.clock.now(), msg.id),
      // The receipt is the delivery's, settled when this row was written: not part of the job.
      job: { kind: 'message', message: withoutReceipt(msg) },
    };
  }

  /**
   * Dedupe mark and work row in one transaction, durable before it returns (the platform is
   * acknowledged after). False: accepted before (a retry or a replay), its work already queued.
   */
  function accept(msg: InboundMessage, dedupeId = msg.id): Promise<boolean> {
    return inbox.accept(msg.conversation.platform, dedupeId, turnFor(msg), msg.receipt);
  }

  /** Stops the turn running in a conversation, here or (on a shared database) on another instance. True if one was asked to stop. */
  async function stopRunning(key: string, reason?: StopReason): Promise<boolean> {
    const running = turns.runningIn(key);
    running?.controller.abort(reason);
    // On a shared database the turn may be running on another instance: it is told too.
    const elsewhere = await work.stopElsewhere(key).catch(() => false);
    return running !== undefined || elsewhere;
  }

  /**
   * `/hermes stop` (only the requester or an admin stops the running turn; `refused` says so
   * otherwise) and `/hermes new` (the session is replaced under whatever runs, whoever started
   * it). Either cancels the speaker's pending approvals here.
   */
  async function stopConversation(conversation: Conversation, by: Speaker, via: 'command' | 'new'): Promise<{ stoppedTurn: boolean; cancelledApprovals: number; refused?: string }> {
    let stopped: StopTurnResult;
    if (via === 'new') {
      stopped = (await stopRunning(conversationKey(conversation))) ? { kind: 'stopped' } : { kind: 'not_running', text: say.NOTHING_RUNNING };
    } else {
      stopped = await stopper.stop({ conversation, by, via: 'command' });
    }
    const session = await deps.sessions.current(conversation);
    const cancelled = await approvals.cancelForSession(session.id, by);
    const stoppedTurn = stopped.kind === 'stopped';
    // Each stop (these two and the Stop button) is audited once, here or in stopTurn.
    await auditStop(conversation, by, via, stopped, { cancelledApprovals: cancelled });
    return { stoppedTurn, cancelledApprovals: cancelled, ...(stopped.kind === 'not_allowed' && { refused: stopped.text }) };
  }

  async function auditStop(conversation: Conversation, by: Speaker, via: 'command' | 'new' | 'button' | 'interrupt', stopped: StopTurnResult, detail: Record<string, unknown> = {}): Promise<void> {
    const cancelled = typeof detail.cancelledApprovals === 'number' ? detail.cancelledApprovals : 0;
    const outcome = stopped.kind === 'not_allowed' ? 'refused' : stopped.kind === 'stopped' || cancelled > 0 ? 'stopped' : 'nothing_running';
    await deps.audit.record({ kind: 'stop', outcome, actor: by, conversation, detail: { via, ...detail } });
  }

  const requester = (m: { speaker: Speaker; conversation: Conversation; roles?: readonly string[] }): Requester => ({ speaker: m.speaker, conversation: m.conversation, roles: m.roles });

  /** Nothing is queued for a refused message: it gets this one answer (or, when not allowed, at most the hourly notice). */
  async function answerRefusal(msg: InboundMessage, refusal: Refusal): Promise<void> {
    if (refusal.reason !== 'not_allowed') return send(msg.conversation, say.limitRefusal(refusal, deps.clock.now()), msg.replyTo);
    if (!(await deps.access.noticeDue(msg.speaker))) return;
    const port = portFor(msg.conversation);
    const delivered = await port?.sendPrivate?.(msg.conversation, msg.speaker.userId, say.NOT_ALLOWED, { replyTo: msg.replyTo }).catch((err: Error) => {
      log.warn({ err: err.message, platform: msg.conversation.platform }, 'could not send the not-allowed notice');
      return false;
    });
    if (!delivered) log.info({ platform: msg.conversation.platform }, 'not-allowed notice could not be shown privately here; nothing sent');
  }

  /**
   * Answer: DMs, mentions, and messages in a thread the bot has joined. In such a thread, a bot's
   * post or a message that mentions other people (and not the bot) is talk between others: noted
   * as context for the next turn there, not answered.
   */
  async function accepts(msg: InboundMessage): Promise<'answer' | 'note' | 'ignore'> {
    if (msg.fromBot) {
      return msg.conversation.threadId !== undefined && deps.context && (await deps.sessions.isJoined(msg.conversation)) ? 'note' : 'ignore';
    }
    if (msg.conversation.isDm || msg.mentioned) return 'answer';
    // `respond: all`: every message in that channel (and its threads) is for the bot.
    if (deps.policies?.configured && deps.policies.at(msg.conversation).respond === 'all') return 'answer';
    if (msg.conversation.threadId === undefined || !(await deps.sessions.isJoined(msg.conversation))) return 'ignore';
    return msg.mentionsOthers && deps.context ? 'note' : 'answer';
  }

  async function describePolicy(conversation: Conversation, speaker: Speaker): Promise<string> {
    const policy = deps.policies?.at(conversation) ?? { sources: [], tools: {}, instructions: [], approvers: [], dailyTokens: 0, respond: 'mention' as const };
    const registry = deps.turn.registry;
    const view = { isAdmin: isAdmin(speaker), hasConversationHistory: portFor(conversation)?.reader !== undefined };
    const offered = registry.visible({ ...view, rules: policy.tools }).map((t) => t.name);
    const withheld = registry.names().filter((name) => registry.deniedHere(name, { ...view, rules: policy.tools }));
    const pool = (key: string, limit: number, scope: 'channel' | 'bot'): Promise<DailyUsage> => deps.access.meter.poolToday({ key, limit, scope });
    const channelKey = `channel:${conversation.platform}:${conversation.parentChannelId ?? conversation.channelId}`;
    return policyText({
      policy,
      offered,
      withheld,
      ...(policy.dailyTokens > 0 && { channelUsage: await pool(channelKey, policy.dailyTokens, 'channel') }),
      ...((deps.botDailyTokens ?? 0) > 0 && { botUsage: await pool('bot', deps.botDailyTokens!, 'bot') }),
      busyMode: deps.busyMode?.(conversation) ?? DEFAULT_BUSY_MODE,
      model: policy.model ?? deps.turn.provider.model,
    });
  }

  return {
    async tellAdmins(text) {
      for (const admin of deps.admins) {
        const [platform, userId] = admin.split(':') as [Platform, string];
        const port = ports.get(platform);
        if (!port || !userId) continue;
        // A DM: Slack posts to a user id as the app's DM with them; Discord's private message is a DM.
        const dm: Conversation = { platform, workspaceId: platform === 'discord' ? '@dm' : '', channelId: userId, isDm: true };
        try {
          if (platform === 'discord' && port.sendPrivate) await port.sendPrivate(dm, userId, text);
          else await port.sendText(dm, text);
        } catch (err) {
          log.warn({ err: (err as Error).message, admin }, 'could not tell an admin privately');
        }
      }
    },

    registerPort(port) {
      ports.set(port.platform, port);
    },
    port: (p) => ports.get(p),

    async handleMessage(msg) {
      if (closed) return 'ignored';
      const platform = msg.conversation.platform;
      const max = deps.maxInboundChars ?? DEFAULT_MAX_INBOUND;
      try {
        const verdict = await accepts(msg);
        if (verdict === 'ignore') return 'ignored';
        if (verdict === 'note') {
          if (!(await inbox.mark(platform, msg.id, 'noted', msg.receipt))) return 'duplicate';
          await deps.context!.note(msg);
          return 'noted';
        }
        const refusal = await deps.access.admitMessage(requester(msg), 'message');
        if (refusal) {
          if (!(await inbox.mark(platform, msg.id, 'refused', msg.receipt))) return 'duplicate';
          await answerRefusal(msg, refusal);
          return 'ignored';
        }
        const answer = msg.text.trim() === '' && !msg.attachments?.length ? say.EMPTY_MENTION : msg.text.length > max ? say.messageTooLong(msg.text.length, max) : undefined;
        if (answer !== undefined) {
          if (!(await inbox.mark(platform, msg.id, 'answered', msg.receipt))) return 'duplicate';
          await send(msg.conversation, answer, msg.replyTo);
          return 'queued';
        }
        if (!(await accept(msg))) return 'duplicate';
        if (busyMode(msg.conversation) === 'interrupt') {
          // As the Stop button would, on the new message's author's behalf: the answer being written says who, the audit records it.
          const stopped = await stopRunning(conversationKey(msg.conversation), { kind: 'stopped', by: msg.speaker, via: 'interrupt' });
          if (stopped) await auditStop(msg.conversation, msg.speaker, 'interrupt', { kind: 'stopped' });
        }
        return 'queued';
      } catch (err) {
        log.error({ err: (err as Error).message }, 'store failed while accepting a message');
        if (msg.conversation.isDm || msg.mentioned) await send(msg.conversation, say.STORE_FAILED, msg.replyTo);
        return 'ignored';
      }
    },

    async handleCommand(cmd: CommandInvocation): Promise<CommandReply> {
      const parsed = parseCommand(cmd.text);
      const refusal = parsed.kind === 'task' ? await deps.access.admitMessage(requester(cmd), 'command') : await deps.access.checkAccess(requester(cmd), 'command');
      // A slash command always gets its answer privately, so the notice is not held back to once an hour here.
      if (refusal) return { kind: 'private', text: refusal.reason === 'not_allowed' ? say.NOT_ALLOWED : say.limitRefusal(refusal, deps.clock.now()) };
      if (parsed.kind === 'task') {
        const id = cmd.id ? `cmd:${cmd.id}` : `cmd:${cmd.conversation.channelId}:${deps.clock.now()}:${Math.random().toString(36).slice(2, 8)}`;
        const msg: InboundMessage = { id, conversation: cmd.conversation, speaker: cmd.speaker, text: parsed.text, mentioned: true, replyTo: cmd.replyTo, roles: cmd.roles };
        // A replayed invocation (after a restart) must not start the task a second time.
        if (!(await accept(msg))) return { kind: 'task', text: say.TASK_ALREADY_ACCEPTED };
        return { kind: 'task', text: `Working on it: ${parsed.text.length > 200 ? `${parsed.text.slice(0, 200)}…` : parsed.text}` };
      }
      const reply = await runCommand(parsed, cmd, {
        sessions: deps.sessions,
        facts: deps.facts,
        status: deps.status,
        isAdmin,
        // Admins, and the channel policy's approvers (channels: in hermes.config.yaml), may change a channel's notes.
        notes: { ...(deps.notes && { notes: deps.notes }), mayEdit: (speaker, c) => isAdmin(speaker) || personListed(deps.policies?.at(c.conversation).approvers ?? [], speaker.platform, speaker.userId, c.roles) },
        stop: () => stopConversation(cmd.conversation, cmd.speaker, parsed.kind === 'command' && parsed.name === 'new' ? 'new' : 'command'),
        queueDepth: () => work.active(),
        schedules: deps.schedules,
        policy: (c) => describePolicy(c.conversation, c.speaker),
      });
      if (auditedCommand(parsed)) {
        await deps.audit.record({ kind: 'admin_command', outcome: 'done', actor: cmd.speaker, conversation: cmd.conversation, detail: { command: parsed.name, ...(parsed.arg && { arg: parsed.arg.slice(0, 200) }) } });
      }
      return reply;
    },

    decideApproval: (input): Promise<DecisionResult> => approvals.decide(input),

    stopRunning: (req) => stopper.stop(req),

    async stopTurn(input): Promise<StopTurnResult> {
      try {
        const refusal = await deps.access.checkAccess(requester({ speaker: input.by, conversation: input.conversation, roles: input.roles }), 'click');
        if (refusal) return { kind: 'not_allowed', text: say.NOT_ALLOWED };
        const stopped = await stopper.stop({ conversation: input.conversation, by: input.by, via: 'button', turnId: input.turnId, requesterId: input.requesterId });
        await auditStop(input.conversation, input.by, 'button', stopped, { turnId: input.turnId });
        return stopped;
      } catch (err) {
        log.error({ err: (err as Error).message }, 'stopping a turn failed');
        return { kind: 'not_running', text: say.UNEXPECTED_ERROR };
      }
    },

    async recordFeedback(input): Promise<FeedbackResult> {
      try {
        const refusal = await deps.access.checkAccess(requester({ speaker: input.voter, conversation: input.conversation, roles: input.roles }), 'click');
        if (refusal) return { kind: 'refused', text: say.NOT_ALLOWED };
        const outcome = await feedback.vote({ turnId: input.turnId, voter: speakerKey(input.voter), vote: input.vote, platform: input.conversation.platform, conversation: conversationKey(input.conversation), votedAt: deps.clock.now() });
        return { kind: outcome, text: say.feedbackRecorded(input.vote, outcome === 'changed') };
      } catch (err) {
        log.error({ err: (err as Error).message }, 'storing a vote failed');
        return { kind: 'refused', text: say.FEEDBACK_FAILED };
      }
    },

    async reviseContext(conversation, id, text) {
      try {
        await deps.context?.revise(conversation, id, text);
      } catch (err) {
        log.error({ err: (err as Error).message }, 'could not update a noted thread message');
      }
    },

    // Called by the schedule's work row (the WorkQueue's lane `schedule:<id>` runs one of its due
    // times at a time), in the schedule's own session: runs of one schedule share a history, and
    // the chat's does not mix in.
    async runScheduled(run) {
      if (closed) return 'interrupted';
      const session = await deps.sessions.currentByKey(scheduleSessionKey(run.scheduleId));
      await approvals.supersedeAndRepair(session.id);
      await deps.sessions.append(session.id, [{ role: 'user', content: tagUserText(run.conversation, run.speaker, run.text), speaker: run.speaker, inboundId: run.runId }]);
      const state = newTurnState({ sessionId: session.id, conversation: run.conversation, speaker: run.speaker, isAdmin: isAdmin(run.speaker), replyTo: run.replyTo, header: run.header }, deps.clock.now());
      deps.turn.tracer.record({ type: 'turn_start', turnId: state.turnId, sessionId: session.id, platform: run.conversation.platform, userKey: speakerKey(run.speaker), text: run.text });
      // Not `drive`: people's messages in the conversation are no part of a scheduled run.
      const end = await turns.drive(state);
      if (end === 'answered') return 'answered';
      if (end === 'paused') return 'waiting_for_approval';
      // Aborted by shutdown: the run did not finish, and after the restart it is reported so.
      if (end === 'aborted') return closed ? 'interrupted' : 'stopped';
      return 'failed';
    },

    async recover() {
      // Once, on the first start of this version over round-2 data (later starts find nothing).
      await carryOverRound2({ store: deps.store, database: deps.database, log, turnFor, now: () => deps.clock.now() });
      // Approvals next: a decided one gets its resume row back before the queue starts running rows.
      await approvals.recover();
      await work.start(runJob, (lane) => turns.runningIn(lane)?.controller.abort());
      const sweep = await inbox.sweep().catch((err: Error) => {
        log.warn({ err: err.message }, 'could not sweep old inbound marks');
        return 0;
      });
      if (sweep > 0) log.info({ removed: sweep }, 'swept old inbound dedupe marks');
      // Requests posted by another instance (or before a restart) get an expiry timer here too, so
      // one expires on time even when the instance that posted it died.
      const watch = () => {
        cancelWatch = deps.clock.setTimer(() => {
          approvals
            .watchExpiries()
            .catch((err: Error) => log.warn({ err: err.message }, 'watching approval expiries failed'))
            .finally(() => {
              if (!closed) watch();
            });
        }, EXPIRY_WATCH_MS);
      };
      watch();
    },

    idle: () => work.idle(),
    queueSize: () => work.active(),

    async close() {
      closed = true;
      governor.stop();
      cancelWatch?.();
      approvals.close();
      turns.abortAll();
      await work.close();
      await Promise.race([work.idle(), new Promise((r) => setTimeout(r, 5_000).unref())]);
    },
  };
}
