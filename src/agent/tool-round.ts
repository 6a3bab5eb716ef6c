import type { ApprovalRecord } from '../state/approvals/approval-store.js';
import { effectOf, gatedByOutsideText } from '../capabilities/toolkit/outside-gate.js';
import type { Ready, ToolOutcome } from '../capabilities/toolkit/executor.js';
import type { ChatMessage, Conversation, Speaker, ToolCall } from '../basics/types.js';
import type { LoopGuard } from './loop-guards.js';
import { ONE_APPROVAL_AT_A_TIME } from '../basics/model-notes.js';
import { toolCallRecord } from './trace-records.js';
import type { ToolContext } from '../capabilities/toolkit/tool-api.js';
import type { ToolView } from '../capabilities/toolkit/registry.js';
import type { SubAgentMark } from '../runtime/trace/trace-schema.js';
import type { TurnSink } from './turn-sink.js';
import type { TurnDeps } from './turn-state.js';

/** What the model had seen when it asked for the calls being run: outside sources, the user's own words, the messages. */
export interface CallGate {
  sources: string[];
  userText: string;
  seen: readonly ChatMessage[];
}

/**
 * What happens to a call that needs a person (the tool or the operator says so, or it is durable
 * or outward after outside text was read — src/capabilities/toolkit/outside-gate.ts):
 * - ask: the first such call of a response is described and checked, then stored as a pending
 *   approval and the turn pauses once the other calls ran; any further one is answered "did not
 *   run", because two prompts racing each other confuse people (the main agent).
 * - refuse: answered with `refusal` (a sub-agent: nobody can be asked from there).
 */
export type ApprovalHandling =
  | {
      kind: 'ask';
      /** The tool's words for the prompt; a call it cannot describe is refused (outcome) before anyone is asked. */
      describe(p: Ready): Promise<{ ok: true; text?: string } | { ok: false; outcome: ToolOutcome }>;
      /** Everything that can refuse the call without a person, checked after the other calls ran. */
      refuseBeforeAsking(p: Ready): Promise<ToolOutcome | undefined>;
      /** Stores the pending approval. */
      create(p: Ready, description: string | undefined, gate: CallGate): Promise<ApprovalRecord>;
    }
  | { kind: 'refuse'; refusal(toolName: string): string };

export interface ToolRound {
  turnId: string;
  /** Who asked and where (the audit record of a refused call). */
  speaker?: Pick<Speaker, 'platform' | 'userId'>;
  conversation?: Pick<Conversation, 'platform' | 'channelId'>;
  calls: ToolCall[];
  gate: CallGate;
  guard: LoopGuard;
  signal: AbortSignal;
  policy: RoundPolicy;
  /**
   * Messages that follow the round's tool results in the same append, so the step still commits
   * once (the note on calls that could not be parsed). Left out when a call waits for approval:
   * its result, written when decided, must follow the calls with nothing in between.
   */
  notes?: ChatMessage[];
}

/** The part of the loop's policy (agent-loop.ts LoopPolicy) a round uses, declared here so the loop imports the round and not back. */
export interface RoundPolicy {
  view: ToolView;
  approvals: ApprovalHandling;
  toolContext(p: Ready, gate: CallGate): ToolContext;
  mark?: SubAgentMark;
  sink?: TurnSink;
  conversation: { append(messages: ChatMessage[]): Promise<void> };
}

/**
 * Runs one response's tool calls: each is checked (schema, loop guards, approval), the ready ones
 * run together, and every answered call is traced and appended as a tool message, in the order the
 * model wrote them — before a pending approval is stored, so a crash never leaves an approval
 * whose sibling results are missing. The call waiting for approval gets no message: it is answered
 * when decided. Returns the pending approval when the turn must pause.
 */
export async function runToolRound(deps: TurnDeps, round: ToolRound): Promise<ApprovalRecord | undefined> {
  const { calls, gate, guard, signal, policy } = round;
  const results = new Map<string, ToolOutcome>();
  const ready: Ready[] = [];
  let asking: { p: Ready; description?: string } | undefined;

  for (const call of calls) {
    const prepared = deps.executor.prepareCall(call, policy.view);
    if (prepared.kind === 'rejected') {
      results.set(call.id, prepared.outcome);
      if (prepared.outcome.errorKind === 'refused' && deps.registry.deniedHere(prepared.call.name, policy.view)) {
        void deps.audit?.record({ kind: 'tool_refused', outcome: 'channel_policy', actor: round.speaker, conversation: round.conversation, tool: prepared.call.name, args: call.arguments, ...(policy.mark && { detail: { agent: policy.mark.agent } }) });
      }
      guard.record({ name: call.name, ok: false });
      continue;
    }
    const verdict = guard.check({ name: call.name, args: prepared.args });
    if (!verdict.allow) {
      results.set(call.id, { callId: call.id, name: prepared.tool.name, ok: false, content: verdict.modelMessage, durationMs: 0, errorKind: 'not_run', args: prepared.args });
      continue;
    }
    const effect = effectOf(prepared.tool, prepared.args, deps.registry.settingsFor(prepared.tool.name).effect, { userText: gate.userText, seen: gate.seen });
    if (!prepared.needsApproval && !gatedByOutsideText(effect, gate.sources)) {
      ready.push(prepared);
      continue;
    }
    if (policy.approvals.kind === 'refuse') {
      results.set(call.id, { callId: call.id, name: prepared.tool.name, ok: false, content: policy.approvals.refusal(prepared.tool.name), durationMs: 0, errorKind: 'refused', args: prepared.args });
      guard.record({ name: prepared.tool.name, ok: false });
      continue;
    }
    if (asking) {
      results.set(call.id, { callId: call.id, name: call.name, ok: false, content: ONE_APPROVAL_AT_A_TIME, durationMs: 0, errorKind: 'not_run' });
      continue;
    }
    const described = await policy.approvals.describe(prepared);
    if (!described.ok) {
      results.set(call.id, described.outcome);
      guard.record({ name: call.name, ok: false });
      continue;
    }
    asking = { p: prepared, ...(described.text !== undefined && { description: described.text }) };
  }

  if (ready.length) policy.sink?.toolsStarting?.(ready.map((p) => p.tool.name));
  const outcomes = await deps.executor.runMany(ready, (p) => policy.toolContext(p, gate));
  for (const o of outcomes) {
    results.set(o.callId, o);
    guard.record({ name: o.name, ok: o.ok });
  }

  if (asking && policy.approvals.kind === 'ask' && !signal.aborted) {
    const refusal = await policy.approvals.refuseBeforeAsking(asking.p);
    if (refusal) {
      results.set(asking.p.call.id, refusal);
      guard.record({ name: refusal.name, ok: false });
      asking = undefined;
    }
  }

  const toolMessages: ChatMessage[] = [];
  for (const call of calls) {
    const o = results.get(call.id);
    if (!o) continue; // the approval-gated call: answered when decided
    deps.tracer.record(toolCallRecord(round.turnId, o, o.args ?? call.arguments, policy.mark));
    toolMessages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: o.content, ...(o.outsideSource && { outsideSource: o.outsideSource }), ...(o.images && { images: o.images }) });
  }
  const appended = asking ? toolMessages : [...toolMessages, ...(round.notes ?? [])];
  if (appended.length) await policy.conversation.append(appended);
  if (!asking || policy.approvals.kind !== 'ask' || signal.aborted) return undefined;
  const record = await policy.approvals.create(asking.p, asking.description, gate);
  deps.tracer.record({ type: 'approval', turnId: round.turnId, approvalId: record.id, tool: record.toolName, status: 'pending' });
  return record;
}
