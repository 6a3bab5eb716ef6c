import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ModelProvider, ToolSpec } from '../provider/provider.js';
import { ModelError } from '../provider/provider.js';
import type { ChatMessage, Conversation, Speaker, ToolCall } from '../types.js';
import type { ToolContext } from '../toolkit/tool-api.js';
import type { ToolRegistry, ToolView } from '../toolkit/registry.js';
import { errorOutcome, TOOL_MESSAGES, type Ready, type ToolExecutor, type ToolOutcome } from '../toolkit/executor.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { ApprovalRecord, ApprovalStore } from '../approvals/approval-store.js';
import type { Tracer } from '../trace/tracer.js';
import type { TokenCounter } from '../context/token-counter.js';
import { buildContext } from '../context/build-context.js';
import { toolArgsStub } from '../context/context-window.js';
import { MAX_TOOL_ARGS_CHARS } from '../toolkit/executor.js';
import { summarizeTurns } from '../context/summarizer.js';
import { hidePrivateCalls } from '../context/private-calls.js';
import { createLoopGuard } from './loop-guards.js';
import { buildSystemPrompt } from './system-prompt.js';
import { USE_SKILL_TOOL, type SkillSummary } from '../skills/skill-library.js';
import { argsTooLargeToShow, ONE_APPROVAL_AT_A_TIME, unparseableToolCalls } from './model-notes.js';
import { MAX_SHOWN_ARGS_CHARS, shownArgsJson } from '../approvals/shown-args.js';
import type { FactStore } from '../memory/fact-store.js';
import { effectOf, gatedByOutsideText, outsideSourcesIn, requestText } from '../safety/outside-gate.js';

/** What the model had seen when it asked for the calls being run: outside sources and the user's own words. */
interface CallGate {
  sources: string[];
  userText: string;
}
import { DailyBudgetExhausted, type DailyUsage, type Payer, type UsageMeter } from '../access/usage-meter.js';

/**
 * Everything a turn needs to remember across an approval pause (and a restart): stored under
 * `turn:<id>` by the gateway. `stepsUsed` makes HERMES_MAX_STEPS count across the pause.
 */
export interface TurnState {
  turnId: string;
  sessionId: string;
  conversation: Conversation;
  speaker: Speaker;
  isAdmin: boolean;
  replyTo?: string;
  stepsUsed: number;
  startedAt: number;
  promptTokens: number;
  completionTokens: number;
  /** Set when the state was stored for an approval pause (so only then is there a record to delete). */
  paused?: boolean;
  /** A scheduled run: the first line of every post of the turn ("⏰ <name>" and notes). */
  header?: string;
}

/**
 * How a run of model steps ends:
 * - answered: the model wrote a final answer (text is what the user sees)
 * - paused: a tool needs approval; the pending record is stored, nothing ran
 * - step_limit: HERMES_MAX_STEPS model calls without a final answer
 * - model_error: the provider failed (permanent, transient after retries, timeout)
 * - aborted: the caller's signal fired (`/hermes stop`, shutdown)
 * - budget_exhausted: the speaker's daily tokens ran out before the next model call
 */
export type TurnEnd =
  | { kind: 'answered'; text: string }
  | { kind: 'paused'; approval: ApprovalRecord }
  | { kind: 'step_limit' }
  | { kind: 'model_error'; error: ModelError }
  | { kind: 'aborted' }
  | { kind: 'budget_exhausted'; usage: DailyUsage };

export interface TurnDeps {
  provider: ModelProvider;
  registry: ToolRegistry;
  executor: ToolExecutor;
  sessions: SessionStore;
  approvals: ApprovalStore;
  facts: FactStore;
  counter: TokenCounter;
  tracer: Tracer;
  clock: Clock;
  log: Logger;
  limits: { maxSteps: number; contextTokens: number; approvalTtlMs: number; factTokens: number };
  timezone: string;
  /** Whether this conversation can be read (read_channel_history is offered only then). */
  canReadHistory?(conversation: Conversation): boolean;
  /** Daily token accounting (HERMES_USER_DAILY_TOKENS); absent = nothing counted (benchmarks). */
  usage?: { meter: UsageMeter; payer(speaker: Speaker): Payer };
  /**
   * Builds the per-call tool context (facts, reminders, net scoped to this speaker and place).
   * `call` is given for calls the turn's own model made (sub-agents start from it).
   */
  toolContext(state: TurnState, signal: AbortSignal, toolName: string, call?: CallInfo): ToolContext;
  /** The usable skills (names and descriptions), listed in the system prompt while use_skill is offered. */
  skills?(): readonly SkillSummary[];
}

/** One call of this turn's model, as a sub-agent started from it inherits it (src/subagents). */
export interface CallInfo {
  id: string;
  /** Outside sources the model had read when it asked for the call (the gate carries on inside). */
  sources: readonly string[];
  /** The requesting user's own words in this turn. */
  userText: string;
  /** A short note for the person while the call runs ("researcher: fetch_url"). */
  progress(note: string): void;
}

export function newTurnState(input: Omit<TurnState, 'turnId' | 'stepsUsed' | 'startedAt' | 'promptTokens' | 'completionTokens'>, now: number): TurnState {
  return { ...input, turnId: randomUUID(), stepsUsed: 0, startedAt: now, promptTokens: 0, completionTokens: 0 };
}

/**
 * Runs model steps until an answer, a pause or a limit. Every message is appended to the session
 * as soon as it exists, so a crash leaves history that the gateway can repair (never a lost turn).
 */
export interface TurnHooks {
  /** Tools are about to run (the terminal prints it; chat platforms show a status instead). */
  toolsStarting?(names: string[]): void;
  /** A note while a tool runs, e.g. which sub-agent is doing what ("researcher: fetch_url"). */
  progress?(note: string): void;
}

function toolView(deps: TurnDeps, state: TurnState): ToolView {
  return { isAdmin: state.isAdmin, hasConversationHistory: deps.canReadHistory?.(state.conversation) ?? false };
}

/**
 * The provider every model call of this turn goes through — steps, running summaries and anything
 * a tool runs on the turn's behalf (sub-agents): the speaker's tokens are counted and their daily
 * budget enforced in this one place.
 */
export function turnProvider(deps: Pick<TurnDeps, 'provider' | 'usage'>, state: Pick<TurnState, 'speaker'>): ModelProvider {
  return deps.usage ? deps.usage.meter.provider(deps.provider, deps.usage.payer(state.speaker)) : deps.provider;
}

export async function runSteps(deps: TurnDeps, state: TurnState, signal: AbortSignal, hooks: TurnHooks = {}): Promise<TurnEnd> {
  const guard = createLoopGuard();
  const view = toolView(deps, state);
  const provider = turnProvider(deps, state);

  while (state.stepsUsed < deps.limits.maxSteps) {
    if (signal.aborted) return { kind: 'aborted' };
    // Checked before the step, so not even a running summary is paid for once the day is used up.
    const exhausted = deps.usage && (await deps.usage.meter.exhausted(deps.usage.payer(state.speaker)));
    if (exhausted) return { kind: 'budget_exhausted', usage: exhausted };
    const session = await deps.sessions.get(state.sessionId);
    if (!session) throw new Error(`session ${state.sessionId} vanished`);
    // Only what the running summary does not cover yet: long sessions stay cheap to load.
    const base = session.summarizedUpTo;
    const isPrivate = (name: string) => deps.registry.isPrivate(name);
    const history = hidePrivateCalls(await deps.sessions.history(state.sessionId, base), state.speaker, isPrivate);
    const lastUser = [...history].reverse().find((m) => m.role === 'user');
    const facts = await deps.facts.promptFacts(state.speaker, lastUser?.content ?? '', deps.limits.factTokens, deps.counter);
    const tools: ToolSpec[] = deps.registry.specsFor(view);
    const skills = deps.skills && tools.some((t) => t.name === USE_SKILL_TOOL) ? deps.skills() : [];
    const system = buildSystemPrompt({ now: new Date(deps.clock.now()), timezone: deps.timezone, conversation: state.conversation, speaker: state.speaker, facts, skills });
    const { messages } = await buildContext({
      system,
      session: { ...session, summarizedUpTo: 0 },
      history,
      budgetTokens: deps.limits.contextTokens,
      tools,
      counter: deps.counter,
      // The summary is read on everyone's turns, so no private call goes into it.
      summarize: (prev, msgs) => summarizeTurns(provider, prev, hidePrivateCalls(msgs, undefined, isPrivate), signal),
      saveSummary: (summary, upTo) => deps.sessions.setSummary(state.sessionId, summary, base + upTo),
      log: deps.log,
    });

    state.stepsUsed += 1;
    const started = deps.clock.now();
    let response;
    try {
      response = await provider.complete({ messages, tools, signal });
    } catch (err) {
      if (err instanceof DailyBudgetExhausted) {
        state.stepsUsed -= 1; // no model call happened
        return { kind: 'budget_exhausted', usage: err.usage };
      }
      const error = err instanceof ModelError ? err : new ModelError('transient', (err as Error).message);
      deps.tracer.record({ type: 'model_call', turnId: state.turnId, step: state.stepsUsed, model: deps.provider.model, messages, tools: tools.map((t) => t.name), response: null, latencyMs: deps.clock.now() - started, error: `${error.kind}: ${error.message}` });
      return error.kind === 'aborted' ? { kind: 'aborted' } : { kind: 'model_error', error };
    }
    state.promptTokens += response.usage.promptTokens;
    state.completionTokens += response.usage.completionTokens;
    deps.tracer.record({ type: 'model_call', turnId: state.turnId, step: state.stepsUsed, model: response.model, requestModel: deps.provider.model, messages, tools: tools.map((t) => t.name), response, usage: response.usage, latencyMs: deps.clock.now() - started });

    if (response.toolCalls.length === 0) {
      if (response.parseErrors.length > 0) {
        await deps.sessions.append(state.sessionId, [
          { role: 'assistant', content: response.content ?? '' },
          { role: 'user', content: `[system note] ${unparseableToolCalls(response.parseErrors)}` },
        ]);
        continue;
      }
      const text = (response.content ?? '').trim();
      await deps.sessions.append(state.sessionId, [{ role: 'assistant', content: text }]);
      return { kind: 'answered', text };
    }

    await deps.sessions.append(state.sessionId, [{ role: 'assistant', content: response.content, toolCalls: response.toolCalls.map(forHistory) }]);
    const gate: CallGate = { sources: outsideSourcesIn(messages), userText: requestText(history) };
    const paused = await runToolCalls(deps, state, response.toolCalls, guard, signal, hooks, gate);
    if (paused) return { kind: 'paused', approval: paused };
    if (response.parseErrors.length > 0) {
      // Some calls were understood and ran; the ones that were not must not vanish silently.
      await deps.sessions.append(state.sessionId, [{ role: 'user', content: `[system note] ${unparseableToolCalls(response.parseErrors)}` }]);
    }
  }
  return { kind: 'step_limit' };
}

/** Arguments over the per-call cap are refused; history keeps a stub, not the refused megabyte. */
function forHistory(call: ToolCall): ToolCall {
  return call.arguments.length > MAX_TOOL_ARGS_CHARS ? { ...call, arguments: toolArgsStub(call.arguments.length) } : call;
}

/**
 * Executes one response's tool calls. Calls that need approval are not run: the first one gets a
 * stored pending record (and pauses the turn once the others are done); any further one is
 * answered "did not run", because two prompts racing each other confuse people. A call needs
 * approval when its tool (or the operator) says so, or when it is durable or outward and the model
 * had read outside text (src/safety/outside-gate.ts); the record keeps those sources for the prompt.
 */
async function runToolCalls(
  deps: TurnDeps,
  state: TurnState,
  calls: ToolCall[],
  guard: ReturnType<typeof createLoopGuard>,
  signal: AbortSignal,
  hooks: TurnHooks,
  gate: CallGate,
): Promise<ApprovalRecord | undefined> {
  const view = toolView(deps, state);
  const results = new Map<string, ToolOutcome>();
  const ready: Ready[] = [];
  let approvalCall: (typeof ready)[number] | undefined;
  let description: string | undefined;

  for (const call of calls) {
    const prepared = deps.executor.prepareCall(call, view);
    if (prepared.kind === 'rejected') {
      results.set(call.id, prepared.outcome);
      guard.record({ name: call.name, ok: false });
      continue;
    }
    const verdict = guard.check({ name: call.name, args: prepared.args });
    if (!verdict.allow) {
      results.set(call.id, { callId: call.id, name: call.name, ok: false, content: verdict.modelMessage, durationMs: 0, errorKind: 'not_run' });
      continue;
    }
    const effect = effectOf(prepared.tool, prepared.args, deps.registry.settingsFor(prepared.tool.name).effect, { userText: gate.userText });
    if (prepared.needsApproval || gatedByOutsideText(effect, gate.sources)) {
      if (approvalCall) {
        results.set(call.id, { callId: call.id, name: call.name, ok: false, content: ONE_APPROVAL_AT_A_TIME, durationMs: 0, errorKind: 'not_run' });
        continue;
      }
      // The tool's words for the prompt; a call it cannot describe is refused before anyone is asked.
      const described = await describeCall(deps, state, signal, prepared);
      if (!described.ok) {
        results.set(call.id, described.outcome);
        guard.record({ name: call.name, ok: false });
        continue;
      }
      approvalCall = prepared;
      description = described.text;
      continue;
    }
    ready.push(prepared);
  }

  if (ready.length) hooks.toolsStarting?.(ready.map((p) => p.tool.name));
  const progress = (note: string) => hooks.progress?.(note);
  const outcomes = await deps.executor.runMany(ready, (p) => deps.toolContext(state, signal, p.tool.name, { id: p.call.id, sources: gate.sources, userText: gate.userText, progress }));
  for (const o of outcomes) {
    results.set(o.callId, o);
    guard.record({ name: o.name, ok: o.ok });
  }

  if (approvalCall && !signal.aborted) {
    const refusal = await refusedBeforeApproval(deps, state, approvalCall, signal);
    if (refusal) {
      results.set(approvalCall.call.id, refusal);
      guard.record({ name: refusal.name, ok: false });
      approvalCall = undefined;
    }
  }

  const toolMessages: ChatMessage[] = [];
  for (const call of calls) {
    const o = results.get(call.id);
    if (!o) continue; // the approval-gated call: answered when decided
    deps.tracer.record({ type: 'tool_call', turnId: state.turnId, callId: o.callId, name: o.name, args: o.args ?? call.arguments, ok: o.ok, result: o.content, raw: o.raw, startedAt: o.startedAt, durationMs: o.durationMs, errorKind: o.errorKind });
    toolMessages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: o.content, ...(o.outsideSource && { outsideSource: o.outsideSource }) });
  }
  if (toolMessages.length) await deps.sessions.append(state.sessionId, toolMessages);
  if (!approvalCall || signal.aborted) return undefined;

  const record = await deps.approvals.create({
    sessionId: state.sessionId,
    conversation: state.conversation,
    replyTo: state.replyTo,
    turnId: state.turnId,
    toolCallId: approvalCall.call.id,
    toolName: approvalCall.tool.name,
    args: approvalCall.args,
    requester: state.speaker,
    ...(description === undefined ? {} : { description }),
    expiresAt: deps.clock.now() + deps.limits.approvalTtlMs,
    ...(gate.sources.length > 0 && { sources: gate.sources }),
  });
  deps.tracer.record({ type: 'approval', turnId: state.turnId, approvalId: record.id, tool: record.toolName, status: 'pending' });
  return record;
}

type Described = { ok: true; text?: string } | { ok: false; outcome: ToolOutcome };

async function describeCall(deps: TurnDeps, state: TurnState, signal: AbortSignal, p: Ready): Promise<Described> {
  if (!p.tool.describeCall) return { ok: true };
  try {
    return { ok: true, text: await p.tool.describeCall(p.args, deps.toolContext(state, signal, p.tool.name)) };
  } catch (err) {
    return { ok: false, outcome: errorOutcome(p.call, 'failed', TOOL_MESSAGES.failed(p.tool.name, (err as Error).message), p.args) };
  }
}

/**
 * Everything that can refuse a gated call without a person, before a person is asked: arguments
 * too long to show in full, then the tool's own checks (network rules).
 */
async function refusedBeforeApproval(deps: TurnDeps, state: TurnState, p: Ready, signal: AbortSignal): Promise<ToolOutcome | undefined> {
  const shown = shownArgsJson(p.args).length;
  if (shown > MAX_SHOWN_ARGS_CHARS) {
    return { callId: p.call.id, name: p.tool.name, args: p.args, ok: false, errorKind: 'not_run', durationMs: 0, content: argsTooLargeToShow(p.tool.name, shown, MAX_SHOWN_ARGS_CHARS) };
  }
  return deps.executor.checkBeforeApproval(p, deps.toolContext(state, signal, p.tool.name));
}

/** Runs an approved call with the stored arguments (never re-asked from the model). */
export async function runApprovedCall(deps: TurnDeps, state: TurnState, record: ApprovalRecord, signal: AbortSignal): Promise<ToolOutcome> {
  const prepared = deps.executor.prepareCall({ id: record.toolCallId, name: record.toolName, arguments: JSON.stringify(record.args) }, toolView(deps, state));
  const outcome =
    prepared.kind === 'rejected'
      ? prepared.outcome
      : await deps.executor.runPrepared(prepared, deps.toolContext(state, signal, prepared.tool.name, { id: record.toolCallId, sources: record.sources ?? [], userText: '', progress: () => undefined }));
  deps.tracer.record({ type: 'tool_call', turnId: state.turnId, callId: outcome.callId, name: outcome.name, args: record.args, ok: outcome.ok, result: outcome.content, raw: outcome.raw, startedAt: outcome.startedAt, durationMs: outcome.durationMs, errorKind: outcome.errorKind });
  return outcome;
}
