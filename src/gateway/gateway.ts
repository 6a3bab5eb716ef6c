import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { Store } from '../state/store/store.js';
import { StoreWriteError } from '../state/store/store.js';
import type { Conversation, ImageRef, InboundMessage, Platform, Speaker } from '../basics/types.js';
import { conversationKey, speakerKey } from '../basics/types.js';
import type { SessionStore } from '../state/sessions/session-store.js';
import type { ApprovalStore } from '../state/approvals/approval-store.js';
import type { FactStore } from '../state/memory/fact-store.js';
import type { TurnDeps } from '../agent/turn-runner.js';
import { newTurnState } from '../agent/turn-runner.js';
import { tagUserText } from '../agent/system-prompt.js';
import type { ApprovalOutcome, CommandInvocation, CommandReply, DecisionResult, GatewayApi, OutboundPort } from '../basics/ports.js';
import type { WorkContext, WorkItem, WorkQueue } from '../state/cluster/work-queue.js';
import type { OpenedDatabase } from '../state/store/database.js';
import { fixedLimit, type LoadGovernor } from './load-governor.js';
import { createSessionQueue } from './session-queue.js';
import { createTurnDriver, type DriveEnd } from './turn-driver.js';
import { createInbox } from './inbox.js';
import { carryOverRound2 } from './carry-over.js';
import { clockOrderKey } from './order-key.js';
import { createApprovalFlow } from './approval-flow.js';
import { runCommand, type CommandDeps } from './command-handlers.js';
import { parseCommand } from './commands.js';
import * as say from './user-messages.js';
import type { ConversationContext } from './conversation-context.js';
import type { ScheduleStore } from '../state/schedules/schedule-store.js';
import type { ScheduledRun, ScheduledRunEnd } from '../state/schedules/schedule-runs.js';
import { scheduleSessionKey } from '../state/schedules/schedule-record.js';
import type { Gatekeeper, Refusal, Requester } from './access/gatekeeper.js';
import type { PolicyBook } from '../settings/policy-book.js';
import { policyText } from './policy-text.js';
import type { DailyUsage } from '../state/usage/usage-meter.js';

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
  /** Every turn and approval resume goes through it; the gateway never knows which one it is. */
  work: WorkQueue<SessionJob>;
  /** Scheduled tasks, for `/hermes schedules` and `unschedule`. */
  schedules?: ScheduleStore;
  /** Channel policies (hermes.config.yaml `channels:`): respond, approvers, `/hermes policy`. */
  policies?: PolicyBook;
  /** HERMES_DAILY_TOKENS (0 = none), for `/hermes policy`. */
  botDailyTokens?: number;
  /** The busy mode in force where no policy sets one (HERMES_BUSY_MODE), for `/hermes policy`. */
  defaultBusyMode?: string;
  /** Saves a message's attached files into the session's workspace before its turn (files-and-code). */
  intake?(msg: InboundMessage, sessionId: string, port: OutboundPort | undefined): Promise<{ modelNote?: string; userNotice?: string; images?: ImageRef[] }>;
}

/** Session work as data, so any instance (or this one after a restart) can run it. */
export type SessionJob =
  | { kind: 'message'; message: InboundMessage }
  | { kind: 'resume'; approvalId: string; outcome: ApprovalOutcome; by?: Speaker };

export interface Gateway extends GatewayApi {
  port(platform: Platform): OutboundPort | undefined;
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
/** How often an instance looks for approval requests it has no expiry timer for (posted elsewhere). */
const EXPIRY_WATCH_MS = 30_000;

export function createGateway(deps: GatewayDeps): Gateway {
  const ports = new Map<Platform, OutboundPort>();
  const governor = deps.governor ?? fixedLimit(deps.maxConcurrentTurns);
  // Scheduled runs only (they wait for their end in this process); everything else is deps.work.
  const queue = createSessionQueue(governor);
  const work = deps.work;
  const inbox = createInbox(deps.database, work, () => deps.clock.now());
  const log = deps.log;
  let closed = false;
  let cancelWatch: (() => void) | undefined;

  const isAdmin = (s: Speaker) => deps.admins.includes(`${s.platform}:${s.userId}`);
  const portFor = (c: Conversation) => ports.get(c.platform);

  const turns = createTurnDriver({ ...deps, portFor, showApproval: (r) => approvals.show(r) });
  const { drive, send } = turns;

  const approvals = createApprovalFlow({
    ...deps,
    onRefusedDecision: (r, by) => {
      deps.turn.tracer.record({ type: 'refusal', turnId: r.turnId, reason: 'not_approver', source: 'click', platform: by.platform, userKey: speakerKey(by) });
      log.info({ approvalId: r.id, tool: r.toolName, person: `${by.platform}:${by.userId}` }, 'approval click refused: not the requester, an admin or an approver here');
    },
    portFor,
    isAdmin,
    drive: async (state, before) => {
      await drive(state, before);
    },
    resumeLater: async (r, outcome, by) => {
      await work.add({ id: `resume:${r.id}`, kind: 'resume', lane: conversationKey(r.conversation), order: clockOrderKey(deps.clock.now(), r.id), job: { kind: 'resume', approvalId: r.id, outcome, by } });
    },
  });

  /** One job of a session, run by whichever worker claimed its row. */
  async function runJob(job: SessionJob, ctx: WorkContext): Promise<void | 'interrupted'> {
    if (job.kind === 'resume') {
      const result = await approvals.runJob(job.approvalId, job.outcome, job.by, ctx.startedBefore);
      if (result === 'interrupted') {
        const r = await deps.approvals.get(job.approvalId);
        if (r) await send(r.conversation, say.RESTART_INTERRUPTED, r.replyTo);
      }
      // A continuation cut off mid-run leaves its record 'running': the next claim reports it unknown.
      return ctx.signal.aborted ? 'interrupted' : undefined;
    }
    const msg = job.message;
    if (ctx.startedBefore && (await turnStarted(msg))) {
      // An instance that died (or shut down) was in this turn. Re-running could repeat side effects, so (as
      // after a restart) the history is repaired and the user is told.
      const session = await deps.sessions.current(msg.conversation);
      await approvals.repairHistory(session.id);
      await send(msg.conversation, say.RESTART_INTERRUPTED, msg.replyTo);
      return;
    }
    const key = conversationKey(msg.conversation);
    // Losing the claim (this instance stalled) or shutting down stops the turn here.
    const stop = () => turns.runningIn(key)?.abort();
    ctx.signal.addEventListener('abort', stop, { once: true });
    try {
      const end = await processMessage(msg);
      return end === 'aborted' && ctx.signal.aborted ? 'interrupted' : undefined;
    } finally {
      ctx.signal.removeEventListener('abort', stop);
    }
  }

  async function turnStarted(msg: InboundMessage): Promise<boolean> {
    const session = await deps.sessions.current(msg.conversation);
    const recent = await deps.sessions.history(session.id);
    return recent.some((m) => m.role === 'user' && m.inboundId === msg.id);
  }

  /** The queued job for one user message. */
  async function processMessage(msg: InboundMessage): Promise<DriveEnd> {
    try {
      // The bot is about to answer in this thread: from now on it is part of it.
      if (msg.conversation.threadId) await deps.sessions.markJoined(msg.conversation);
      const session = await deps.sessions.current(msg.conversation);
      await approvals.supersede(session.id);
      await approvals.repairHistory(session.id);
      if (deps.context) {
        const gathered = await deps.context.gather(msg, () => deps.sessions.history(session.id), portFor(msg.conversation));
        if (gathered.userNote) await send(msg.conversation, gathered.userNote, msg.replyTo);
        if (gathered.messages.length) await deps.sessions.append(session.id, gathered.messages);
        await deps.context.clearNoted(msg, gathered.notedIds);
      }
      const files = msg.attachments?.length && deps.intake ? await deps.intake(msg, session.id, portFor(msg.conversation)) : undefined;
      if (files?.userNotice) await send(msg.conversation, files.userNotice, msg.replyTo);
      const said = msg.text.trim() === '' ? '(sent only files)' : msg.text;
      const text = files?.modelNote ? `${said}\n\n${files.modelNote}` : said;
      // Attached images travel as references (src/runtime/vision): the model is shown them if it can see.
      await deps.sessions.append(session.id, [{ role: 'user', content: tagUserText(msg.conversation, msg.speaker, text), speaker: msg.speaker, inboundId: msg.id, ...(files?.images && { images: files.images }) }]);
      const state = newTurnState({ sessionId: session.id, conversation: msg.conversation, speaker: msg.speaker, isAdmin: isAdmin(msg.speaker), replyTo: msg.replyTo }, deps.clock.now());
      deps.turn.tracer.record({ type: 'turn_start', turnId: state.turnId, sessionId: session.id, platform: msg.conversation.platform, userKey: speakerKey(msg.speaker), text: msg.text });
      return await drive(state);
    } catch (err) {
      log.error({ err: (err as Error).message }, 'could not start a turn');
      await send(msg.conversation, err instanceof StoreWriteError ? say.STORE_FAILED : say.UNEXPECTED_ERROR, msg.replyTo);
      return 'error';
    }
  }

  /** The work row that answers a message: in its conversation's lane, at the platform's place for it. */
  function turnFor(msg: InboundMessage): WorkItem<SessionJob> {
    return {
      id: `msg:${msg.conversation.platform}:${msg.id}`,
      kind: 'turn',
      lane: conversationKey(msg.conversation),
      order: msg.order ?? clockOrderKey(deps.clock.now(), msg.id),
      job: { kind: 'message', message: msg },
    };
  }

  /**
   * Dedupe mark and work row in one transaction, durable before it returns (the platform is
   * acknowledged after). False: accepted before (a retry or a replay), its work already queued.
   */
  function accept(msg: InboundMessage, dedupeId = msg.id): Promise<boolean> {
    return inbox.accept(msg.conversation.platform, dedupeId, turnFor(msg));
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
      busyMode: policy.busyMode ?? deps.defaultBusyMode ?? 'steer',
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
          if (!(await inbox.mark(platform, msg.id, 'noted'))) return 'duplicate';
          await deps.context!.note(msg);
          return 'noted';
        }
        const refusal = await deps.access.admitMessage(requester(msg), 'message');
        if (refusal) {
          if (!(await inbox.mark(platform, msg.id, 'refused'))) return 'duplicate';
          await answerRefusal(msg, refusal);
          return 'ignored';
        }
        const answer = msg.text.trim() === '' && !msg.attachments?.length ? say.EMPTY_MENTION : msg.text.length > max ? say.messageTooLong(msg.text.length, max) : undefined;
        if (answer !== undefined) {
          if (!(await inbox.mark(platform, msg.id, 'answered'))) return 'duplicate';
          await send(msg.conversation, answer, msg.replyTo);
          return 'queued';
        }
        return (await accept(msg)) ? 'queued' : 'duplicate';
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
      const key = conversationKey(cmd.conversation);
      return runCommand(parsed, cmd, {
        sessions: deps.sessions,
        facts: deps.facts,
        status: deps.status,
        isAdmin,
        stop: async () => {
          const controller = turns.runningIn(key);
          controller?.abort();
          // On a shared database the turn may be running on another instance: it is told too.
          const elsewhere = await work.stopElsewhere(key).catch(() => false);
          const session = await deps.sessions.current(cmd.conversation);
          const cancelled = await approvals.cancelForSession(session.id, cmd.speaker);
          return { stoppedTurn: controller !== undefined || elsewhere, cancelledApprovals: cancelled };
        },
        queueDepth: () => queue.size() + work.active(),
        schedules: deps.schedules,
        policy: (c) => describePolicy(c.conversation, c.speaker),
      });
    },

    decideApproval: (input): Promise<DecisionResult> => approvals.decide(input),

    async reviseContext(conversation, id, text) {
      try {
        await deps.context?.revise(conversation, id, text);
      } catch (err) {
        log.error({ err: (err as Error).message }, 'could not update a noted thread message');
      }
    },

    // In the conversation's queue slot (after whatever is already running there), in the
    // schedule's own session: runs of one schedule share a history, and the chat's does not mix in.
    runScheduled(run) {
      return queue.run(conversationKey(run.conversation), async (): Promise<ScheduledRunEnd> => {
        if (closed) return 'interrupted';
        const session = await deps.sessions.currentByKey(scheduleSessionKey(run.scheduleId));
        await approvals.supersede(session.id);
        await approvals.repairHistory(session.id);
        await deps.sessions.append(session.id, [{ role: 'user', content: tagUserText(run.conversation, run.speaker, run.text), speaker: run.speaker, inboundId: run.runId }]);
        const state = newTurnState({ sessionId: session.id, conversation: run.conversation, speaker: run.speaker, isAdmin: isAdmin(run.speaker), replyTo: run.replyTo, header: run.header }, deps.clock.now());
        deps.turn.tracer.record({ type: 'turn_start', turnId: state.turnId, sessionId: session.id, platform: run.conversation.platform, userKey: speakerKey(run.speaker), text: run.text });
        const end = await drive(state);
        if (end === 'answered') return 'answered';
        if (end === 'paused') return 'waiting_for_approval';
        // Aborted by shutdown: the run did not finish, and after the restart it is reported so.
        if (end === 'aborted') return closed ? 'interrupted' : 'stopped';
        return 'failed';
      });
    },

    async recover() {
      // Approvals first: a decided one gets its resume row back before the queue starts running rows.
      await approvals.recover();
      // Once, on the first start of this version over round-2 data (later starts find nothing).
      await carryOverRound2({ store: deps.store, database: deps.database, log, turnFor });
      await work.start(runJob, (lane) => turns.runningIn(lane)?.abort());
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

    idle: () => Promise.all([queue.idle(), work.idle()]).then(() => undefined),
    queueSize: () => queue.size() + work.active(),

    async close() {
      closed = true;
      governor.stop();
      cancelWatch?.();
      approvals.close();
      turns.abortAll();
      await work.close();
      await Promise.race([Promise.all([queue.idle(), work.idle()]), new Promise((r) => setTimeout(r, 5_000).unref())]);
    },
  };
}
