import type { DailyUsage } from '../../state/usage/usage-meter.js';
import { DailyBudgetExhausted } from '../../state/usage/usage-meter.js';
import { createLoopGuard, type LoopGuard } from '../loop-guards.js';
import { unparseableToolCalls } from '../../basics/model-notes.js';
import { turnProvider, type CallInfo, type TurnDeps, type TurnState } from '../turn-runner.js';
import { buildContext } from '../../runtime/context/build-context.js';
import { ModelError } from '../../runtime/provider/provider.js';
import { effectOf, gatedByOutsideText, outsideSourcesIn } from '../../capabilities/toolkit/outside-gate.js';
import type { Ready, ToolOutcome } from '../../capabilities/toolkit/executor.js';
import type { ToolView } from '../../capabilities/toolkit/registry.js';
import type { DelegationRequest } from '../../capabilities/toolkit/tool-api.js';
import type { ChatMessage, ToolCall } from '../../basics/types.js';
import { approvalRule, DELEGATE_TOOL, type AgentProfile } from '../../settings/agent-profiles.js';
import { SUBAGENT_MODEL_TEXT, SUBAGENT_USER_TEXT, subAgentSystemPrompt, taskMessage } from './subagent-text.js';

/**
 * One sub-agent run: the agent loop again, on a fresh, in-memory context — the profile's
 * instructions and the task, never the session's history or the speaker's facts — with only the
 * profile's tools. What stays the same as the parent turn: the speaker (tools act as that person, in
 * the session's workspace), their permissions (admin-only tools only for admins), their daily token
 * budget (every call goes through turnProvider), the loop guards, tool timeouts and the cancel signal.
 *
 * Ends (SubAgentEnd):
 * - answered: the model wrote a final answer
 * - step_limit: the profile's max_steps model calls without one
 * - model_error: the provider failed
 * - aborted: the signal fired (`/hermes stop`, shutdown, the delegate call's timeout)
 * - budget_exhausted: the speaker's daily tokens ran out
 *
 * A call that would need a person (the tool or operator says so, or it is durable or outward after
 * outside text was read, here or by the parent before it delegated) is refused inside: nobody can be
 * asked from here. The tools that always need approval are not offered in the first place.
 */
export type SubAgentEnd =
  | { kind: 'answered'; text: string }
  | { kind: 'step_limit' }
  | { kind: 'model_error'; error: ModelError }
  | { kind: 'aborted' }
  | { kind: 'budget_exhausted'; usage: DailyUsage };

export interface SubAgentRun {
  profile: AgentProfile;
  request: DelegationRequest;
  /** The parent's delegate call. */
  call: CallInfo;
  signal: AbortSignal;
}

/** Counted as the run goes, so a cancelled run's spent tokens are not lost. */
export interface SubAgentTally {
  steps: number;
  promptTokens: number;
  completionTokens: number;
  /** Outside sources the sub-agent itself read (its answer is outside text to the parent then). */
  sources: string[];
}

export async function runSubAgent(deps: TurnDeps, state: TurnState, run: SubAgentRun, tally: SubAgentTally): Promise<SubAgentEnd> {
  const { profile, call, signal } = run;
  const view: ToolView = {
    isAdmin: state.isAdmin,
    hasConversationHistory: deps.canReadHistory?.(state.conversation) ?? false,
    only: offeredTools(deps, profile),
  };
  const provider = turnProvider(deps, state);
  const guard = createLoopGuard();
  const transcript: ChatMessage[] = [{ role: 'user', content: taskMessage(run.request) }];
  const mark = { agent: profile.name, parentCallId: call.id };

  while (tally.steps < profile.maxSteps) {
    if (signal.aborted) return { kind: 'aborted' };
    const exhausted = deps.usage && (await deps.usage.meter.exhausted(deps.usage.payer(state.speaker)));
    if (exhausted) return { kind: 'budget_exhausted', usage: exhausted };
    const tools = deps.registry.specsFor(view);
    const system = subAgentSystemPrompt(profile, new Date(deps.clock.now()), deps.timezone);
    const { messages } = await buildContext({
      system,
      session: { id: `${state.sessionId}:${profile.name}:${call.id}`, summarizedUpTo: 0 },
      history: transcript,
      budgetTokens: deps.limits.contextTokens,
      tools,
      counter: deps.counter,
      // One task is one turn: the window trims its tool results, never folds it into a summary.
      summarize: () => Promise.reject(new Error('a sub-agent has no earlier turns to summarise')),
      saveSummary: async () => undefined,
      log: deps.log,
    });

    tally.steps += 1;
    const started = deps.clock.now();
    let response;
    try {
      response = await provider.complete({ messages, tools, signal, ...(profile.model && { model: profile.model }) });
    } catch (err) {
      if (err instanceof DailyBudgetExhausted) {
        tally.steps -= 1;
        return { kind: 'budget_exhausted', usage: err.usage };
      }
      const error = err instanceof ModelError ? err : new ModelError('transient', (err as Error).message);
      deps.tracer.record({ type: 'model_call', turnId: state.turnId, step: tally.steps, model: profile.model ?? deps.provider.model, messages, tools: tools.map((t) => t.name), response: null, latencyMs: deps.clock.now() - started, error: `${error.kind}: ${error.message}`, ...mark });
      return error.kind === 'aborted' || signal.aborted ? { kind: 'aborted' } : { kind: 'model_error', error };
    }
    tally.promptTokens += response.usage.promptTokens;
    tally.completionTokens += response.usage.completionTokens;
    deps.tracer.record({ type: 'model_call', turnId: state.turnId, step: tally.steps, model: response.model, requestModel: profile.model ?? deps.provider.model, messages, tools: tools.map((t) => t.name), response, usage: response.usage, latencyMs: deps.clock.now() - started, ...mark });

    if (response.toolCalls.length === 0) {
      if (response.parseErrors.length > 0) {
        transcript.push({ role: 'assistant', content: response.content ?? '' }, { role: 'user', content: `[system note] ${unparseableToolCalls(response.parseErrors)}` });
        continue;
      }
      return { kind: 'answered', text: (response.content ?? '').trim() };
    }

    transcript.push({ role: 'assistant', content: response.content, toolCalls: response.toolCalls });
    const seen = [...new Set([...call.sources, ...outsideSourcesIn(messages)])];
    const outcomes = await runCalls(deps, state, run, view, guard, response.toolCalls, seen);
    for (const c of response.toolCalls) {
      const o = outcomes.get(c.id)!;
      deps.tracer.record({ type: 'tool_call', turnId: state.turnId, callId: o.callId, name: o.name, args: o.args ?? c.arguments, ok: o.ok, result: o.content, raw: o.raw, startedAt: o.startedAt, durationMs: o.durationMs, errorKind: o.errorKind, ...mark });
      if (o.outsideSource && !tally.sources.includes(o.outsideSource)) tally.sources.push(o.outsideSource);
      transcript.push({ role: 'tool', toolCallId: c.id, name: c.name, content: o.content, ...(o.outsideSource && { outsideSource: o.outsideSource }) });
    }
    if (response.parseErrors.length > 0) transcript.push({ role: 'user', content: `[system note] ${unparseableToolCalls(response.parseErrors)}` });
  }
  return { kind: 'step_limit' };
}

/**
 * The profile's tools a sub-agent may be offered: never `delegate`, never a tool that always asks a
 * person. The start-up check (checkProfiles) already refuses such profiles; this keeps it true for
 * a core built without that check and for tools registered or re-configured later.
 */
function offeredTools(deps: TurnDeps, profile: AgentProfile): ReadonlySet<string> {
  const alwaysGated = (name: string) => approvalRule(deps.registry.get(name)?.needsApproval, deps.registry.settingsFor(name).needsApproval) === true;
  return new Set(profile.tools.filter((t) => t !== DELEGATE_TOOL && !alwaysGated(t)));
}

/** One response's calls: checked like the parent's, except that nothing may wait for a person. */
async function runCalls(
  deps: TurnDeps,
  state: TurnState,
  run: SubAgentRun,
  view: ToolView,
  guard: LoopGuard,
  calls: ToolCall[],
  sources: string[],
): Promise<Map<string, ToolOutcome>> {
  const results = new Map<string, ToolOutcome>();
  const ready: Ready[] = [];
  for (const call of calls) {
    const prepared = deps.executor.prepareCall(call, view);
    if (prepared.kind === 'rejected') {
      results.set(call.id, prepared.outcome);
      guard.record({ name: call.name, ok: false });
      continue;
    }
    const verdict = guard.check({ name: call.name, args: prepared.args });
    if (!verdict.allow) {
      results.set(call.id, { callId: call.id, name: prepared.tool.name, ok: false, content: verdict.modelMessage, durationMs: 0, errorKind: 'not_run', args: prepared.args });
      continue;
    }
    const effect = effectOf(prepared.tool, prepared.args, deps.registry.settingsFor(prepared.tool.name).effect, { userText: run.call.userText });
    if (prepared.needsApproval || gatedByOutsideText(effect, sources)) {
      results.set(call.id, { callId: call.id, name: prepared.tool.name, ok: false, content: SUBAGENT_MODEL_TEXT.cannotAsk(prepared.tool.name), durationMs: 0, errorKind: 'refused', args: prepared.args });
      guard.record({ name: prepared.tool.name, ok: false });
      continue;
    }
    ready.push(prepared);
  }
  if (ready.length) run.call.progress(SUBAGENT_USER_TEXT.tools(run.profile.name, ready.map((p) => p.tool.name)));
  // The sub-agent's own tools get a context without `call`: they cannot start sub-agents (one level).
  const outcomes = await deps.executor.runMany(ready, (p) => deps.toolContext(state, run.signal, p.tool.name));
  for (const o of outcomes) {
    results.set(o.callId, o);
    guard.record({ name: o.name, ok: o.ok });
  }
  return results;
}
