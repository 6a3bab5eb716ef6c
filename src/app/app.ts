import path from 'node:path';
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../basics/clock.js';
import { secretValues } from '../settings/config-secrets.js';
import type { Config } from '../settings/config.js';
import type { Store } from '../state/store/store.js';
import { openStore, type OpenedStore } from '../state/store/open-store.js';
import type { PostgresStore } from '../state/store/postgres-store.js';
import { createLeadership, type Leadership } from '../state/cluster/leadership.js';
import { createLeases } from '../state/cluster/lease.js';
import { createCachedStore } from '../state/store/cached-store.js';
import { createSessionStore } from '../state/sessions/session-store.js';
import { createApprovalStore } from '../state/approvals/approval-store.js';
import { createFactStore } from '../state/memory/fact-store.js';
import { createTokenCounter } from '../runtime/context/token-counter.js';
import { lazyEmbedder, lazyOpenAIProvider } from '../runtime/provider/lazy-provider.js';
import type { ModelProvider } from '../runtime/provider/provider.js';
import { ToolRegistry } from '../capabilities/toolkit/registry.js';
import { ToolExecutor } from '../capabilities/toolkit/executor.js';
import type { AnyTool } from '../capabilities/toolkit/tool-api.js';
import { createNetClient } from '../capabilities/net/safe-fetch.js';
import type { NetClient } from '../capabilities/net/net-client.js';
import { createReminderStore } from '../state/reminders/reminder-store.js';
import { createReminderRunner } from '../state/reminders/reminder-delivery.js';
import { createScheduleStore } from '../state/schedules/schedule-store.js';
import { createScheduleRunner } from '../state/schedules/schedule-runs.js';
import { scheduleSessionKey } from '../state/schedules/schedule-record.js';
import { formatReminder } from '../state/reminders/format-reminder.js';
import { createTracer } from '../runtime/trace/tracer.js';
import { startTelemetry, withTelemetry } from '../operations/telemetry/telemetry.js';
import { createRedactor } from '../runtime/trace/redact.js';
import { createGateway, type Gateway } from '../gateway/gateway.js';
import { createLoadGovernor, eventLoopSampler } from '../gateway/load-governor.js';
import type { TurnDeps } from '../agent/turn-runner.js';
import { createStatusReporter } from '../operations/stats/status-text.js';
import { createConversationContext } from '../gateway/conversation-context.js';
import { createNotedMessages } from '../state/sessions/noted-messages.js';
import { createWorkspaces } from '../capabilities/workspace/workspace.js';
import { saveAttachments } from '../capabilities/workspace/intake.js';
import { workspaceLimits } from '../capabilities/sandbox/limits.js';
import { createGatekeeper, type Gatekeeper } from '../gateway/access/gatekeeper.js';
import { createSubAgents } from '../agent/subagents/subagents.js';
import { createVisionSupport } from '../runtime/vision/vision-support.js';
import { probeVision } from '../runtime/vision/vision-probe.js';
import { createTurnImages } from '../agent/turn-images.js';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from '../state/store/database.js';
import { storeFilePath } from '../state/store/open-store.js';
import { createLocalWorkQueue } from '../state/cluster/local-work-queue.js';
import { createPgWorkQueue } from '../state/cluster/pg-work-queue.js';
import type { WorkQueue } from '../state/cluster/work-queue.js';
import type { SessionJob } from '../gateway/gateway.js';
import type { McpHub } from '../capabilities/mcp/mcp-hub.js';
import { watchConfigFile } from '../settings/config-watch.js';
import { createConfigReload, type ReloadResult, type ReloadTrigger } from './config-reload.js';
import { rereadConfigFile } from '../settings/config-file.js';
import { botBudgetWarning } from '../gateway/user-messages.js';
import type { SkillLibrary } from '../capabilities/skills/skill-library.js';
import { createMessageIndex } from '../state/recall/message-index.js';
import { createConversationSearch } from '../state/recall/conversation-search.js';
import { createEmbeddingQueue, type EmbeddingQueue } from '../state/recall/embedding-queue.js';
import { withFactMeaning } from '../state/recall/fact-meaning.js';
import { createChannelNotes } from '../state/notes/channel-notes.js';
import { createPolicyBook, type PolicyBook } from '../settings/policy-book.js';
import { skillAllowed } from '../settings/channel-policies.js';
import { createAuditLog, type AuditLog } from '../state/audit/audit-log.js';
import { createAuditRetention, DAY_MS } from '../state/audit/audit-retention.js';
import { auditPinChanges } from '../state/audit/audit-pins.js';
import { auditedSchedules } from '../state/audit/audited-schedules.js';
import { configHash } from '../settings/config-hash.js';

export interface CoreOptions {
  config: Config;
  log: Logger;
  clock?: Clock;
  store?: Store;
  /** Set with `store` when it is on a PostgreSQL database that other instances share (benchmarks). */
  shared?: PostgresStore;
  /** The operational tables to use with `store`; absent → opened next to it (and closed with the core). */
  database?: OpenedDatabase;
  /** Work claim lease, poll and settle time on a shared store (tests shorten them). */
  clusterTiming?: { leaseMs?: number; pollMs?: number; settleMs?: number };
  /** Replaces the OpenAI provider (evaluation harness, benchmarks). */
  provider?: ModelProvider;
  /** Replaces the network client (tests that need a custom DNS lookup). */
  net?: NetClient;
  /** The tools to offer (main passes the built-in set from tools/index.ts). */
  tools?: AnyTool[];
  /** More tools on top (tests add gated test tools here). */
  extraTools?: AnyTool[];
  /** Run reminders and scheduled tasks when they are due, and the retention sweep (default true); off, their work rows wait for a process that runs them. */
  reminders?: boolean;
  /** A trace record that does not match trace-schema.ts: `throw` in tests, logged otherwise. */
  invalidTraces?: 'throw' | 'log';
  /** The skills under HERMES_SKILLS_DIR (main opens them; their tools come in `tools`). */
  skills?: SkillLibrary;
  /** MCP reconnect backoff (tests shorten it). */
  mcpBackoff?: { baseDelayMs?: number; maxDelayMs?: number };
  /** How often the config file is checked for a change (default 1 s; tests shorten it). */
  configWatchMs?: number;
  /** Told of every config reload (valid or rejected). */
  onReload?(event: { trigger: ReloadTrigger; result: ReloadResult; file: string }): void;
}

/** MCP servers and skills, as /hermes status and the CLI see them. */
export interface Extensions {
  mcp?: McpHub;
  skills?: SkillLibrary;
}

export interface Core {
  gateway: Gateway;
  store: Store;
  /** The operational tables (receipts journal, inbound marks, work). */
  database: OpenedDatabase;
  config: Config;
  log: Logger;
  registry: ToolRegistry;
  extensions: Extensions;
  /**
   * On a shared database: the lease that makes one instance at a time do `name` (hold the Discord
   * gateway connection). Undefined on SQLite, where the one instance always does it.
   */
  leadership(name: string): Leadership | undefined;
  /**
   * Who may use the bot and how much. Work that starts without a message (reminders, scheduled
   * runs) asks `access.checkAccess` at run time; scheduled runs go through the gateway's turn
   * runner, whose model calls are metered against the creator's daily tokens.
   */
  access: Gatekeeper;
  /** Search and embeddings: `idle` resolves once texts queued for embedding are written (tests, benchmarks). */
  recall: { idle(): Promise<void> };
  /** The channel policies in force (hermes.config.yaml `channels:`). */
  policies: PolicyBook;
  /**
   * Reads the config file again (SIGHUP; a change of the file does it by itself): an invalid file
   * is rejected with a log line and the config in force stays. Undefined result: no config file.
   */
  reloadConfig(trigger?: ReloadTrigger): ReloadResult | undefined;
  /** The append-only audit record (approvals, refusals, stops, commands, schedules, pins, config). */
  audit: AuditLog;
  /** Call after adapters registered their ports: resumes interrupted work, starts reminders. */
  start(): Promise<void>;
  /** Writes buffered trace lines (the crash handler calls it before exiting). */
  flushTraces(): Promise<void>;
  close(): Promise<void>;
}

/** `make()` on the first call, the same value after. */
function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

/** Names this process as a lease holder: unique per start, readable in the database. */
function instanceId(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** Wires the platform-neutral core: store, model, tools, gateway. Adapters plug in afterwards. */
export async function createCore(opts: CoreOptions): Promise<Core> {
  const { config, log } = opts;
  const clock = opts.clock ?? systemClock;
  const opened: OpenedStore = opts.store
    ? { store: opts.store, shared: opts.shared, database: opts.database ?? (opts.shared ? await openPostgresDatabase(opts.shared.pool, log, opts.shared.reserved) : await openSqliteDatabase(storeFilePath(config), log)) }
    : await openStore(config, log);
  const ownsDatabase = opts.store !== undefined && opts.database === undefined;
  const database = opened.database;
  // Another instance may change any key at any time on a shared database: nothing is cached then.
  const store = opened.shared ? opened.store : createCachedStore(opened.store);
  const self = instanceId();
  const sessions = createSessionStore(database, clock);
  const approvals = createApprovalStore(database, clock);
  // Embeddings (HERMES_EMBEDDING_MODEL) through the model server's /embeddings, in the background.
  const embeddings: EmbeddingQueue | undefined = config.model.embeddingModel
    ? createEmbeddingQueue({
        embedder: lazyEmbedder({ apiKey: config.model.apiKey, baseURL: config.model.baseURL, model: config.model.embeddingModel, timeoutMs: Math.min(config.model.timeoutMs, 30_000) }),
        database, clock, log,
      })
    : undefined;
  const messageIndex = createMessageIndex({ database, log });
  if (embeddings) messageIndex.onRecorded((m) => embeddings.add({ kind: 'message', ref: m.id, text: m.text }));
  const searches = createConversationSearch({ index: messageIndex, ...(embeddings && { embeddings }) });
  // The one queue of every kind of work: turns, approval resumes, reminders, scheduled runs.
  const governor = createLoadGovernor({ max: config.limits.maxConcurrentTurns, sampler: eventLoopSampler() });
  const pgWork = opened.shared
    ? createPgWorkQueue<SessionJob>({ database, url: opened.shared.url, instanceId: self, log, clock, maxConcurrent: () => governor.limit(), onRaise: (fn) => governor.onRaise(fn), ...opts.clusterTiming })
    : undefined;
  const work: WorkQueue<SessionJob> = pgWork ?? createLocalWorkQueue<SessionJob>({ database, log, clock, maxConcurrent: () => governor.limit(), onRaise: (fn) => governor.onRaise(fn) });
  // On PostgreSQL the instances tell each other of changed notes and facts over the queue's channel.
  const channelNotes = createChannelNotes({ database, clock, invalidations: pgWork?.invalidations });
  const plainFacts = createFactStore(store, clock, { invalidations: pgWork?.invalidations });
  const facts = embeddings ? withFactMeaning(plainFacts, { database, embeddings }) : plainFacts;
  const reminders = createReminderStore(database, clock, work);
  const schedules = createScheduleStore(database, clock, { ...config.schedules, defaultTimezone: config.timezone }, work);
  const startedAt = clock.now();
  const counter = createTokenCounter(config.model.name);
  const redact = createRedactor(secretValues(config));
  const telemetry = await startTelemetry(config.telemetry, { log, redact, now: () => clock.now(), modelBaseUrl: config.model.baseURL });
  const tracer = withTelemetry(createTracer({ dir: path.join(config.dataDir, 'traces'), log, redact, now: () => clock.now(), invalid: opts.invalidTraces ?? 'log' }), telemetry, () => clock.now());
  // The openai SDK loads at the first model call, not at start (lazy-provider.ts).
  const provider = opts.provider ?? lazyOpenAIProvider({ ...config.model, model: config.model.name, log });
  const net = opts.net ?? createNetClient({ allow: config.netAllow, log });
  const audit = createAuditLog({ database, clock, log, redact });
  // Creating and cancelling (tools, /hermes unschedule) go through this; runs use the store itself.
  const schedulesAudited = auditedSchedules(schedules, audit);
  // hermes.config.yaml `channels:`, replaced as a whole by reloadConfig().
  const policies = createPolicyBook(config.channels);
  const access = createGatekeeper({
    database, clock, tracer, log, audit, admins: config.admins, allow: config.usage.allow, ratePerMinute: config.usage.ratePerMinute, dailyTokens: config.usage.dailyTokens,
    botDailyTokens: config.usage.botDailyTokens,
    policies,
    onBotWarning: (usage) => {
      log.warn({ used: usage.used, limit: usage.limit }, 'the bot has used 80 % of HERMES_DAILY_TOKENS today; admins are told');
      void gateway.tellAdmins(botBudgetWarning(usage, clock.now()));
    },
  });

  const registry = new ToolRegistry(config.tools, log);
  for (const tool of [...(opts.tools ?? []), ...(opts.extraTools ?? [])]) registry.register(tool);
  const unknown = registry.unknownConfiguredTools();
  if (unknown.length) log.warn({ tools: unknown }, 'hermes.config tools section names tools that do not exist (typo?)');
  const executor = new ToolExecutor({ registry, defaultTimeoutMs: config.limits.toolTimeoutMs, clock });
  // MCP servers connect in the background; their tools join the registry as each comes up.
  // The MCP SDK loads only when a server is configured.
  const mcp = config.extensions.servers.length
    ? (await import('../capabilities/mcp/mcp-hub.js')).createMcpHub({ servers: config.extensions.servers, registry, clock, log: log.child({ component: 'mcp' }), connection: { ...opts.mcpBackoff } })
    : undefined;
  const extensions: Extensions = { ...(mcp && { mcp }), ...(opts.skills && { skills: opts.skills }) };
  const configFile = config.extensions.configFile;
  const pinAudit = auditPinChanges(audit, { servers: new Map(config.extensions.servers.map((s) => [s.name, s.pin])), skills: config.extensions.skillPins });
  const initialFile = configFile ? rereadConfigFile(configFile) : undefined;
  const reloader = configFile
    ? createConfigReload({
        file: configFile,
        initial: initialFile?.ok ? initialFile.file : undefined,
        policies,
        log,
        ...((mcp || opts.skills) && {
          onPins: (pins) => {
            void pinAudit(pins);
            mcp?.setPins(pins.servers);
            opts.skills?.setPins(pins.skills);
          },
        }),
        onReload: (e) => {
          // The audit keeps every reload, the rejected ones with why.
          void audit.record({
            kind: 'config',
            outcome: e.result.ok ? 'reloaded' : 'reload_rejected',
            detail: e.result.ok
              ? { trigger: e.trigger, fileHash: e.result.hash, changed: e.result.changed, needsRestart: e.result.needsRestart, configFile: e.file }
              : { trigger: e.trigger, errors: e.result.errors.slice(0, 5), configFile: e.file },
          });
          opts.onReload?.(e);
        },
      })
    : undefined;
  // One watch on the file: pins and channel policies are read again together.
  const stopWatchingConfig = configFile && reloader ? watchConfigFile(configFile, { intervalMs: opts.configWatchMs, onChange: () => void reloader.reload('file') }) : undefined;

  const workspaces = createWorkspaces({ dir: config.files.workspaceDir, limits: workspaceLimits(config.files) });
  const vision = createVisionSupport({
    ...config.vision,
    // A provider passed in (the eval harness's scripted model) is no server to ask: `auto` means off.
    mode: opts.provider && config.vision.mode === 'auto' ? 'off' : config.vision.mode,
    model: config.model.name,
    baseURL: config.model.baseURL,
    probe: () => probeVision({ baseURL: config.model.baseURL, apiKey: config.model.apiKey, model: config.model.name }),
    file: path.join(config.dataDir, 'vision.json'),
    log,
  });
  const subagents = createSubAgents({ turn: () => turn, maxParallel: config.limits.maxParallelAgents });
  const turn: TurnDeps = {
    provider, registry, executor, sessions, approvals, facts, counter, tracer, clock, log,
    usage: { meter: access.meter, payer: access.payer },
    images: createTurnImages({ vision, workspace: (sessionId) => workspaces.forSession(sessionId), log }),
    limits: {
      maxSteps: config.limits.maxSteps,
      contextTokens: config.limits.contextTokens,
      approvalTtlMs: config.limits.approvalTtlMs,
      factTokens: Math.max(200, Math.floor(config.limits.contextTokens / 10)),
    },
    timezone: config.timezone,
    grounding: config.limits.grounding,
    ...(opts.skills && { skills: opts.skills.list }),
    policies,
    audit,
    canReadHistory: (c) => gateway.port(c.platform)?.reader !== undefined,
    channelNotes: async (c) => {
      try {
        return (await channelNotes.get(c))?.text;
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'channel notes could not be read; this turn goes without them');
        return undefined;
      }
    },
    toolContext: (state, signal, toolName, call) => {
      const reader = gateway.port(state.conversation.platform)?.reader;
      // Built on first use: most calls touch none of these, and a step runs this for every call.
      const userFacts = once(() => facts.forUser(state.speaker));
      const userReminders = once(() => reminders.forUser(state.speaker, state.conversation, state.replyTo));
      const userSchedules = once(() => {
        const r = schedulesAudited.forUser(state.speaker, state.conversation, state.replyTo);
        return r;
      });
      const userSearch = once(() => searches.forSpeaker(state.speaker, { dms: state.conversation.isDm, ...(state.messageId && { exclude: [state.messageId] }) }));
      const toolLog = once(() => log.child({ tool: toolName, turnId: state.turnId }));
      const workspace = once(() => workspaces.forSession(state.sessionId));
      return {
        signal, clock,
        speaker: state.speaker,
        isAdmin: state.isAdmin,
        conversation: state.conversation,
        get facts() { return userFacts(); },
        get reminders() { return userReminders(); },
        get schedules() { return userSchedules(); },
        get conversations() { return userSearch(); },
        net,
        // Bound to the conversation the request came from: the model has no way to name another.
        ...(reader && { history: { read: (opts: { limit: number; before?: string }) => reader.readChannel(state.conversation, opts) } }),
        settings: registry.settingsFor(toolName).settings,
        defaults: { timezone: config.timezone },
        get log() { return toolLog(); },
        get workspace() { return workspace(); },
        images: { maxBytes: config.vision.maxImageBytes },
        skillAllowed: (name: string) => skillAllowed(policies.at(state.conversation).tools, name),
        sendFile: async (file) => {
          const port = gateway.port(state.conversation.platform);
          if (!port?.sendFile) throw new Error(`${state.conversation.platform} cannot receive files from me`);
          await port.sendFile(state.conversation, file, { replyTo: state.replyTo });
        },
        notice: async (text) => {
          const port = gateway.port(state.conversation.platform);
          await port?.sendText(state.conversation, text, { replyTo: state.replyTo }).catch((err: Error) => log.warn({ err: err.message, tool: toolName }, 'tool notice not posted'));
        },
        // Only a call of the turn's own model may start sub-agents; theirs get no `call` (one level).
        ...(call && { agents: subagents.forCall(state, call) }),
      };
    },
  };

  const status = createStatusReporter({ config, tracesDir: tracer.dir, flushTraces: () => tracer.flush(), provider, approvals, reminders, clock, log, usage: (speaker) => access.report(speaker), extensions: (isAdmin) => [...(mcp?.statusLines(isAdmin) ?? []), ...(opts.skills?.statusLines(isAdmin) ?? [])] });
  const gateway = createGateway({
    store, sessions, approvals, facts, turn, clock, log,
    admins: config.admins,
    access,
    audit,
    maxConcurrentTurns: config.limits.maxConcurrentTurns,
    governor,
    database,
    work,
    // Reminders and scheduled runs are rows of the same queue; off (`reminders: false`) leaves them waiting.
    ...(opts.reminders !== false && { timers: (job, ctx) => (job.kind === 'reminder' ? reminderRunner(job, ctx) : scheduleRunner(job, ctx)) }),
    progressDelayMs: config.limits.progressDelayMs,
    streaming: config.model.streaming,
    // One mode everywhere for now; a channel policy's busy_mode can answer per conversation here.
    // The channel policy's busy_mode where one is set, HERMES_BUSY_MODE elsewhere (asked per message).
    busyMode: (c) => policies.at(c).busyMode ?? config.busyMode,
    status: (speaker, isAdmin) => status.text(speaker, isAdmin, gateway.queueSize()),
    // A batch of thread context may take about half the prompt budget (≈ 4 characters a token).
    context: createConversationContext({ noted: createNotedMessages(database), clock, log, limit: config.limits.threadContextMessages, maxChars: config.limits.contextTokens * 2 }),
    schedules: schedulesAudited,
    recall: messageIndex,
    notes: channelNotes,
    policies,
    botDailyTokens: config.usage.botDailyTokens,
    intake: (msg, sessionId, port) =>
      saveAttachments({
        attachments: msg.attachments ?? [], workspace: workspaces.forSession(sessionId), port, log: log.child({ turn: 'attachments' }),
        images: { maxBytes: config.vision.maxImageBytes, canSee: () => vision.check() },
      }),
  });
  const leaderships: Leadership[] = [];

  const reminderRunner = createReminderRunner({
    reminders, clock, log,
    deliver: async (r, info) => {
      // A reminder is the creator speaking later: someone no longer allowed gets no more posts.
      if (await access.checkAccess({ speaker: r.speaker, conversation: r.conversation }, 'reminder')) {
        log.info({ reminderId: r.id }, 'reminder not posted: its creator is no longer allowed (HERMES_ALLOW)');
        return;
      }
      const port = gateway.port(r.conversation.platform);
      if (!port) throw new Error(`no ${r.conversation.platform} adapter is running to deliver reminder ${r.id}`);
      await port.sendText(r.conversation, formatReminder(r, port.mention(r.speaker.userId), info.late), { replyTo: r.replyTo, notify: r.speaker.userId });
    },
  });
  const scheduleRunner = createScheduleRunner({
    schedules, clock, log, startedAt,
    graceMs: config.schedules.graceS * 1000,
    run: (run) => gateway.runScheduled(run),
    notify: async (r, text) => {
      const port = gateway.port(r.conversation.platform);
      if (!port) throw new Error(`no ${r.conversation.platform} adapter is running to post for schedule ${r.id}`);
      await port.sendText(r.conversation, text, { replyTo: r.replyTo });
    },
    waitingForApproval: async (r) => {
      const session = await sessions.currentByKey(scheduleSessionKey(r.id));
      return (await approvals.openForSession(session.id)).length > 0;
    },
    // HERMES_ALLOW at run time: a creator taken off the list stops running (traced as a refusal).
    allowed: async (speaker, conversation) => (await access.checkAccess({ speaker, conversation }, 'schedule')) === undefined,
  });
  // Reminders and scheduled runs are work rows (above); only the hourly retention sweep has a timer of its own.
  const retention = createAuditRetention({
    audit, clock, log, days: config.audit.days,
    // Fired, cancelled and failed reminders stay readable for operators this long.
    prune: [{ what: 'reminders that ended', run: (now) => reminders.prune(now - 30 * DAY_MS) }],
  });

  return {
    gateway, store, database, config, log, registry, access, extensions, audit, policies,
    reloadConfig: (trigger = 'signal') => reloader?.reload(trigger),
    recall: { idle: async () => embeddings?.idle() },
    leadership(name) {
      if (!opened.shared) return undefined;
      const l = createLeadership({ leases: createLeases(opened.shared.pool, self), name, failoverMs: config.failoverS * 1000, clock, log });
      leaderships.push(l);
      return l;
    },
    async start() {
      await audit.record({ kind: 'config', outcome: 'start', detail: { configHash: configHash(config), instance: self, ...(configFile && { configFile }) } });
      await gateway.recover();
      if (opts.reminders !== false) retention.start();
    },
    flushTraces: async () => {
      await Promise.all([tracer.flush(), telemetry?.flush()]);
    },
    async close() {
      retention.stop();
      stopWatchingConfig?.();
      await Promise.all(leaderships.map((l) => l.stop()));
      await gateway.close();
      // Jobs finish their bookkeeping (a scheduled run's end) before the store closes.
      await retention.idle();
      await mcp?.close();
      await embeddings?.close();
      await tracer.close();
      await telemetry?.shutdown();
      if (ownsDatabase) await database.close();
      if (!opts.store) await store.close();
    },
  };
}
