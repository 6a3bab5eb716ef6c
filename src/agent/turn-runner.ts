import type { ApprovalRecord } from '../state/approvals/approval-store.js';
import { MAX_SHOWN_ARGS_CHARS, shownArgsJson } from '../state/approvals/shown-args.js';
import { buildContext } from '../runtime/context/build-context.js';
import { hidePrivateCalls } from '../runtime/context/private-calls.js';
import { summarizeTurns } from '../runtime/context/summarizer.js';
import { outsideSourcesIn, requestText } from '../capabilities/toolkit/outside-gate.js';
import { errorOutcome, TOOL_MESSAGES, type Ready, type ToolOutcome } from '../capabilities/toolkit/executor.js';
import type { ToolView } from '../capabilities/toolkit/registry.js';
import { runAgentLoop, type LoopConversation } from './agent-loop.js';
import { argsTooLargeToShow } from '../basics/model-notes.js';
import { buildSystemPrompt, type PromptInput } from './system-prompt.js';
import { sameJson } from '../runtime/trace/trace-prompts.js';
import { promptImages } from '../runtime/vision/prompt-images.js';
import type { ModelProvider } from '../runtime/provider/provider.js';
import { USE_SKILL_TOOL } from '../capabilities/skills/skill-library.js';
import type { ApprovalHandling } from './tool-round.js';
import { toolCallRecord } from './trace-records.js';
import type { TurnSink } from './turn-sink.js';
import { policyFor, turnProvider, type TurnDeps, type TurnEnd, type TurnState } from './turn-state.js';
import { skillAllowed } from '../settings/channel-policies.js';

export type { CallInfo, TurnDeps, TurnEnd, TurnState } from './turn-state.js';
export { newTurnState, turnProvider } from './turn-state.js';

function toolView(deps: TurnDeps, state: TurnState): ToolView {
  const policy = policyFor(deps, state);
  return { isAdmin: state.isAdmin, hasConversationHistory: deps.canReadHistory?.(state.conversation) ?? false, vision: deps.images?.canSee() ?? false, ...(policy && { rules: policy.tools }) };
}

/**
 * Runs the main agent's model steps (agent-loop.ts) until an answer, a pause or a limit, on the
 * session: every message is appended to the session as soon as it exists, so a crash leaves
 * history that the gateway can repair (never a lost turn). Steps count in `state.stepsUsed` across
 * an approval pause; a call that needs a person pauses the turn.
 */
export async function runSteps(deps: TurnDeps, state: TurnState, signal: AbortSignal, sink: TurnSink = {}): Promise<TurnEnd> {
  // Whether the model sees images is settled first (`auto` asks the server once per model), so the
  // tool list knows whether to offer view_image.
  await deps.images?.ready();
  const images = deps.images;
  const policy = policyFor(deps, state);
  return runAgentLoop(deps, { state, tally: state, signal }, {
    view: toolView(deps, state),
    ...(policy?.model && { model: policy.model }),
    ...(images && { modelCalls: (provider: ModelProvider) => images.provider(provider, state.sessionId) }),
    maxSteps: deps.limits.maxSteps,
    conversation: sessionConversation(deps, state, signal),
    approvals: askPerson(deps, state, signal),
    toolContext: (p, gate) => deps.toolContext(state, signal, p.tool.name, { id: p.call.id, sources: gate.sources, userText: gate.userText, progress: (note) => sink.progress?.(note) }),
    grounding: deps.grounding ?? 'off',
    // Resumed after an approval: a tool was called in this turn already.
    toolsCalledBefore: state.stepsUsed > 0,
    sink,
  });
}

/** The session as the loop's conversation: history (private calls of others hidden), facts, system prompt, the window. */
function sessionConversation(deps: TurnDeps, state: TurnState, signal: AbortSignal): LoopConversation {
  const provider = turnProvider(deps, state);
  const systemPrompt = reusedSystemPrompt();
  const isPrivate = (name: string) => deps.registry.isPrivate(name);
  return {
    async next(tools) {
      // The session and only what its running summary does not cover yet, in one read: long
      // sessions stay cheap to load.
      const loaded = await deps.sessions.withHistory(state.sessionId);
      if (!loaded) throw new Error(`session ${state.sessionId} vanished`);
      const { session } = loaded;
      const base = session.summarizedUpTo;
      const visible = hidePrivateCalls(loaded.history, state.speaker, isPrivate);
      // Which images the model is shown (or told of) in this call: src/runtime/vision/prompt-images.ts.
      const history = promptImages(visible, deps.images?.canSee() ?? false);
      const lastUser = [...history].reverse().find((m) => m.role === 'user');
      const facts = await deps.facts.promptFacts(state.speaker, lastUser?.content ?? '', deps.limits.factTokens, deps.counter);
      // Tools are settled when the run of steps starts (a turn, or its continuation after an approval); instructions are read at every step.
      const policy = policyFor(deps, state);
      const skills = deps.skills && tools.some((t) => t.name === USE_SKILL_TOOL) ? deps.skills().filter((s) => !policy || skillAllowed(policy.tools, s.name)) : [];
      const channelNotes = await deps.channelNotes?.(state.conversation);
      const system = systemPrompt({ now: new Date(deps.clock.now()), timezone: deps.timezone, conversation: state.conversation, speaker: state.speaker, facts, skills, channelInstructions: policy?.instructions ?? [], ...(channelNotes && { channelNotes }) });
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
      return { messages, gate: { sources: outsideSourcesIn(messages), userText: requestText(history), seen: messages } };
    },
    append: (messages, searchRow, charge) =>
      deps.sessions.append(state.sessionId, messages, searchRow === undefined && charge === undefined ? undefined : { ...(searchRow !== undefined && { searchRow }), ...(charge !== undefined && { charge }) }),
    carriesCharge: true,
  };
}

/**
 * The system prompt of the previous step again when nothing it is built from changed (the usual
 * case within a turn): the same string, not a new one of a few KB per step, and the trace sees at
 * once that the prompt's first message is the one it already wrote (src/runtime/trace/trace-prompts.ts).
 */
function reusedSystemPrompt(): (input: PromptInput) => string {
  let last: { input: PromptInput; minute: string; text: string } | undefined;
  return (input) => {
    const minute = input.now.toISOString().slice(0, 16);
    const p = last?.input;
    if (
      last && p && last.minute === minute && p.timezone === input.timezone && sameJson(p.conversation, input.conversation) && sameJson(p.speaker, input.speaker) &&
      p.channelNotes === input.channelNotes && sameJson(p.facts, input.facts) && sameJson(p.skills, input.skills) && sameJson(p.channelInstructions, input.channelInstructions)
    ) {
      return last.text;
    }
    last = { input, minute, text: buildSystemPrompt(input) };
    return last.text;
  };
}

/**
 * The main agent asks a person: the tool describes the call, checks that need nobody run first
 * (arguments too long to show in full, then the tool's own checks such as network rules), and the
 * pending record keeps the outside sources the model had read, for the prompt.
 */
function askPerson(deps: TurnDeps, state: TurnState, signal: AbortSignal): ApprovalHandling {
  return {
    kind: 'ask',
    async describe(p) {
      if (!p.tool.describeCall) return { ok: true };
      try {
        return { ok: true, text: await p.tool.describeCall(p.args, deps.toolContext(state, signal, p.tool.name)) };
      } catch (err) {
        return { ok: false, outcome: errorOutcome(p.call, 'failed', TOOL_MESSAGES.failed(p.tool.name, (err as Error).message), p.args) };
      }
    },
    async refuseBeforeAsking(p: Ready): Promise<ToolOutcome | undefined> {
      const shown = shownArgsJson(p.args).length;
      if (shown > MAX_SHOWN_ARGS_CHARS) {
        return { callId: p.call.id, name: p.tool.name, args: p.args, ok: false, errorKind: 'not_run', durationMs: 0, content: argsTooLargeToShow(p.tool.name, shown, MAX_SHOWN_ARGS_CHARS) };
      }
      return deps.executor.checkBeforeApproval(p, deps.toolContext(state, signal, p.tool.name));
    },
    create: (p, description, gate) =>
      deps.approvals.create({
        sessionId: state.sessionId,
        conversation: state.conversation,
        replyTo: state.replyTo,
        turnId: state.turnId,
        toolCallId: p.call.id,
        toolName: p.tool.name,
        args: p.args,
        requester: state.speaker,
        ...(description === undefined ? {} : { description }),
        expiresAt: deps.clock.now() + deps.limits.approvalTtlMs,
        ...(gate.sources.length > 0 && { sources: gate.sources }),
      }),
  };
}

/** Runs an approved call with the stored arguments (never re-asked from the model). */
export async function runApprovedCall(deps: TurnDeps, state: TurnState, record: ApprovalRecord, signal: AbortSignal): Promise<ToolOutcome> {
  const prepared = deps.executor.prepareCall({ id: record.toolCallId, name: record.toolName, arguments: JSON.stringify(record.args) }, toolView(deps, state));
  const outcome =
    prepared.kind === 'rejected'
      ? prepared.outcome
      : await deps.executor.runPrepared(prepared, deps.toolContext(state, signal, prepared.tool.name, { id: record.toolCallId, sources: record.sources ?? [], userText: '', progress: () => undefined }));
  deps.tracer.record(toolCallRecord(state.turnId, outcome, record.args));
  return outcome;
}
