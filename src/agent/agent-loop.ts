import { DailyBudgetExhausted } from '../state/usage/usage-meter.js';
import { ModelError, type CarriedCharge, type ModelProvider, type ModelResponse, type ToolSpec } from '../runtime/provider/provider.js';
import type { ChatMessage, ToolCall } from '../basics/types.js';
import type { ToolContext } from '../capabilities/toolkit/tool-api.js';
import type { Ready } from '../capabilities/toolkit/executor.js';
import { MAX_TOOL_ARGS_CHARS } from '../capabilities/toolkit/executor.js';
import type { ToolView } from '../capabilities/toolkit/registry.js';
import { toolArgsStub } from '../runtime/context/context-window.js';
import type { SubAgentMark } from '../runtime/trace/trace-schema.js';
import { createLoopGuard } from './loop-guards.js';
import { systemNote, unparseableToolCalls } from '../basics/model-notes.js';
import { ungroundedClaims, type GroundingMode } from './grounding.js';
import { runToolRound, type ApprovalHandling, type CallGate } from './tool-round.js';
import type { TurnSink } from './turn-sink.js';
import { turnProvider, type TurnDeps, type TurnEnd, type TurnState } from './turn-state.js';
import { groundingNote } from '../basics/model-notes.js';

/**
 * The conversation a run reads and writes: the session (main agent) or an in-memory transcript
 * (a sub-agent). `next` is asked before every model call, so what was appended — by this loop, or by
 * someone in `TurnSink.beforeModelCall` — is seen by the next step.
 */
export interface LoopConversation {
  /** The messages of the next model call (system prompt, history within the window) and what the approval gate needs. */
  next(tools: ToolSpec[]): Promise<{ messages: ChatMessage[]; gate: CallGate }>;
  /**
   * `searchRow`: opaque, written with the last message in the same statement (TurnSink.answerRow).
   * `charge`: the model call's token charge (opaque, ModelRequest carryCharge), written the same
   * way; passed only to a conversation that says it `carriesCharge`.
   */
  append(messages: ChatMessage[], searchRow?: string, charge?: string): Promise<void>;
  /** The appends write `charge` (a session's history); an in-memory transcript leaves it to the meter. */
  readonly carriesCharge?: boolean;
}

/** Where a run counts its model calls and tokens (TurnState for the main agent, the sub-agent's tally). */
export type LoopTally = Pick<TurnState, 'stepsUsed' | 'promptTokens' | 'completionTokens'>;

/**
 * What differs between the main agent and a sub-agent, passed in rather than forked.
 */
export interface LoopPolicy {
  /** Which tools the model is offered and may call. */
  view: ToolView;
  /** Model calls allowed, counted in `tally.stepsUsed` (which may start above 0 after an approval pause). */
  maxSteps: number;
  /** Another model for every call (a sub-agent profile's `model`). */
  model?: string;
  /** Wraps the run's provider (the main agent's: image bytes read from the session's workspace, turn-images.ts). */
  modelCalls?: (provider: ModelProvider) => ModelProvider;
  conversation: LoopConversation;
  /** What happens to a call that needs a person: ask (the main agent pauses) or refuse (sub-agents). */
  approvals: ApprovalHandling;
  /** The context for a tool call the model made (`gate` is what the model had seen when it asked). */
  toolContext(p: Ready, gate: CallGate): ToolContext;
  /** Added to every model_call and tool_call record of the run (a sub-agent's name and parent call). */
  mark?: SubAgentMark;
  /** The grounding check (grounding.ts); `off` for runs whose answer no person reads as is. */
  grounding: GroundingMode;
  /** A tool was already called in this turn before this run of steps (a turn resumed after approval). */
  toolsCalledBefore?: boolean;
  sink?: TurnSink;
}

/** What a run works on: the turn it belongs to (trace id, payer), its counters and its cancel signal. */
export interface LoopRun {
  state: Pick<TurnState, 'turnId' | 'speaker' | 'conversation'>;
  tally: LoopTally;
  signal: AbortSignal;
}

/**
 * The agent loop, for the main agent (turn-runner.ts) and for sub-agents (src/agent/subagents): model
 * steps until a final answer, a pause for approval or a limit. It is the one place a turn calls the
 * model; every model and tool call is traced here (tool-round.ts for the tools).
 *
 * Ends (TurnEnd): answered · paused (only with `approvals.kind === 'ask'`) · step_limit ·
 * model_error · aborted (the signal fired, before a step or during the model call) ·
 * budget_exhausted (checked before every step; a step refused by the meter is not counted).
 */
export async function runAgentLoop(deps: TurnDeps, run: LoopRun, policy: LoopPolicy): Promise<TurnEnd> {
  const { state, tally, signal } = run;
  const guard = createLoopGuard();
  const metered = turnProvider(deps, state);
  const provider = policy.modelCalls ? policy.modelCalls(metered) : metered;
  const sink = policy.sink ?? {};
  const requestModel = policy.model ?? deps.provider.model;
  let toolsCalled = policy.toolsCalledBefore ?? false;
  let groundingAsked = false;
  // What the model call left to write (the usage meter's charge), written with the step's
  // messages: one commit per step on SQLite instead of one after the other. Marked handled here,
  // rejected to whoever awaits it (the step's append, before the next model call).
  const held: Promise<unknown>[] = [];
  const settleWith = (write: Promise<unknown>) => {
    write.catch(() => undefined);
    held.push(write);
  };
  // The model call's token charge, carried by the step's append (one statement fewer per step).
  // A second one before an append (none is expected) is written on its own.
  let carried: CarriedCharge | undefined;
  const carryCharge = policy.conversation.carriesCharge
    ? (charge: CarriedCharge) => {
        if (carried) settleWith(carried.write());
        carried = charge;
      }
    : undefined;
  const appendStep = async (messages: ChatMessage[], searchRow?: string) => {
    const charge = carried;
    carried = undefined;
    await Promise.all([policy.conversation.append(messages, searchRow, charge?.row), ...held.splice(0)]);
  };

  while (tally.stepsUsed < policy.maxSteps) {
    if (signal.aborted) return { kind: 'aborted' };
    // Checked before the step, so not even a running summary is paid for once the day is used up.
    const exhausted = deps.usage && (await deps.usage.meter.exhausted(deps.usage.payer(state.speaker, state.conversation)));
    if (exhausted) return { kind: 'budget_exhausted', usage: exhausted };
    await sink.beforeModelCall?.();
    const tools = deps.registry.specsFor(policy.view);
    const { messages, gate } = await policy.conversation.next(tools);

    tally.stepsUsed += 1;
    const step = tally.stepsUsed;
    const started = deps.clock.now();
    const traced = { turnId: state.turnId, step, messages, tools: tools.map((t) => t.name), ...policy.mark };
    let response: ModelResponse;
    try {
      response = await provider.complete({ messages, tools, signal, settleWith, ...(carryCharge && { carryCharge }), ...(policy.model && { model: policy.model }), ...(sink.textDelta && { onText: (text: string) => sink.textDelta?.(text) }) });
    } catch (err) {
      if (err instanceof DailyBudgetExhausted) {
        tally.stepsUsed -= 1; // no model call happened
        return { kind: 'budget_exhausted', usage: err.usage };
      }
      const error = err instanceof ModelError ? err : new ModelError('transient', (err as Error).message);
      deps.tracer.record({ type: 'model_call', ...traced, model: requestModel, response: null, latencyMs: deps.clock.now() - started, error: `${error.kind}: ${error.message}` });
      return error.kind === 'aborted' || signal.aborted ? { kind: 'aborted' } : { kind: 'model_error', error };
    }
    tally.promptTokens += response.usage.promptTokens;
    tally.completionTokens += response.usage.completionTokens;
    const latencyMs = deps.clock.now() - started;

    if (response.toolCalls.length === 0) {
      if (response.parseErrors.length > 0) {
        deps.tracer.record({ type: 'model_call', ...traced, model: response.model, requestModel, response, usage: response.usage, latencyMs });
        sink.stepEnded?.('retry');
        await appendStep([{ role: 'assistant', content: response.content ?? '' }, systemNote(unparseableToolCalls(response.parseErrors))]);
        continue;
      }
      const text = (response.content ?? '').trim();
      const claims = policy.grounding === 'retry' && !groundingAsked && !toolsCalled && tools.length > 0 && tally.stepsUsed < policy.maxSteps ? ungroundedClaims(text, messages) : [];
      if (claims.length > 0) {
        // One more step, once: the model checks with a tool or says the figures are from memory.
        groundingAsked = true;
        deps.tracer.record({ type: 'model_call', ...traced, model: response.model, requestModel, response, usage: response.usage, latencyMs, grounding: { claims } });
        sink.stepEnded?.('retry');
        await appendStep([{ role: 'assistant', content: text }, systemNote(groundingNote(claims))]);
        continue;
      }
      deps.tracer.record({ type: 'model_call', ...traced, model: response.model, requestModel, response, usage: response.usage, latencyMs });
      sink.stepEnded?.('answer');
      const row = text ? sink.answerRow?.(text) : undefined;
      await appendStep([{ role: 'assistant', content: text }], row?.json);
      row?.written();
      return { kind: 'answered', text };
    }

    deps.tracer.record({ type: 'model_call', ...traced, model: response.model, requestModel, response, usage: response.usage, latencyMs });
    sink.stepEnded?.('tool_calls');
    toolsCalled = true;
    await appendStep([{ role: 'assistant', content: response.content, toolCalls: response.toolCalls.map(forHistory) }]);
    // Some calls were understood and ran; the ones that were not must not vanish silently: the note
    // rides on the tool results' append (one commit for the step's results).
    const notes = response.parseErrors.length > 0 ? [systemNote(unparseableToolCalls(response.parseErrors))] : undefined;
    const paused = await runToolRound(deps, { turnId: state.turnId, speaker: state.speaker, conversation: state.conversation, calls: response.toolCalls, gate, guard, signal, policy, ...(notes && { notes }) });
    if (paused) return { kind: 'paused', approval: paused };
  }
  return { kind: 'step_limit' };
}

/** Arguments over the per-call cap are refused; history keeps a stub, not the refused megabyte. */
function forHistory(call: ToolCall): ToolCall {
  return call.arguments.length > MAX_TOOL_ARGS_CHARS ? { ...call, arguments: toolArgsStub(call.arguments.length) } : call;
}
