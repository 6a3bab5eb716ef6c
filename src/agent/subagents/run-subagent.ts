import { runAgentLoop, type LoopConversation } from '../agent-loop.js';
import { policyFor, type CallInfo, type TurnDeps, type TurnEnd, type TurnState } from '../turn-state.js';
import { buildContext } from '../../runtime/context/build-context.js';
import { outsideSourcesIn } from '../../capabilities/toolkit/outside-gate.js';
import type { ToolView } from '../../capabilities/toolkit/registry.js';
import type { DelegationRequest } from '../../capabilities/toolkit/tool-api.js';
import type { ChatMessage } from '../../basics/types.js';
import { approvalRule, DELEGATE_TOOL, type AgentProfile } from '../../settings/agent-profiles.js';
import { SUBAGENT_MODEL_TEXT, SUBAGENT_USER_TEXT, subAgentSystemPrompt, taskMessage } from './subagent-text.js';

/**
 * One sub-agent run: the agent loop (agent/agent-loop.ts) on a fresh, in-memory context — the
 * profile's instructions and the task, never the session's history or the speaker's facts — with
 * only the profile's tools. What stays the same as the parent turn: the speaker (tools act as that
 * person, in the session's workspace), their permissions (admin-only tools only for admins), their
 * daily token budget, the loop guards, tool timeouts and the cancel signal.
 *
 * Ends (SubAgentEnd): the loop's, without `paused`. A call that would need a person (the tool or
 * operator says so, or it is durable or outward after outside text was read, here or by the parent
 * before it delegated) is refused inside: nobody can be asked from here. The tools that always need
 * approval are not offered in the first place.
 */
export type SubAgentEnd = Exclude<TurnEnd, { kind: 'paused' }>;

export interface SubAgentRun {
  profile: AgentProfile;
  request: DelegationRequest;
  /** The parent's delegate call. */
  call: CallInfo;
  signal: AbortSignal;
}

/** Counted as the run goes, so a cancelled run's spent tokens are not lost. */
export interface SubAgentTally {
  stepsUsed: number;
  promptTokens: number;
  completionTokens: number;
  /** Outside sources the sub-agent itself read (its answer is outside text to the parent then). */
  sources: string[];
}

export async function runSubAgent(deps: TurnDeps, state: TurnState, run: SubAgentRun, tally: SubAgentTally): Promise<SubAgentEnd> {
  const { profile, call, signal } = run;
  // The channel's policy holds inside a sub-agent too: a tool denied here is neither offered nor run.
  const policy = policyFor(deps, state);
  const view: ToolView = {
    isAdmin: state.isAdmin,
    hasConversationHistory: deps.canReadHistory?.(state.conversation) ?? false,
    only: offeredTools(deps, profile),
    ...(policy && { rules: policy.tools }),
  };
  const end = await runAgentLoop(deps, { state, tally, signal }, {
    view,
    maxSteps: profile.maxSteps,
    ...(profile.model && { model: profile.model }),
    conversation: transcript(deps, state, run, tally),
    approvals: { kind: 'refuse', refusal: SUBAGENT_MODEL_TEXT.cannotAsk },
    // The sub-agent's own tools get a context without `call`: they cannot start sub-agents (one level).
    toolContext: (p) => deps.toolContext(state, signal, p.tool.name),
    mark: { agent: profile.name, parentCallId: call.id },
    // Its answer is read by the parent model, which is checked itself when it answers.
    grounding: 'off',
    sink: { toolsStarting: (names) => call.progress(SUBAGENT_USER_TEXT.tools(profile.name, names)) },
  });
  if (end.kind === 'paused') throw new Error('a sub-agent cannot pause for approval'); // its policy refuses instead
  return end;
}

/** The run's in-memory conversation: the task, then the run's own steps; the sources it read go to the tally. */
function transcript(deps: TurnDeps, state: TurnState, run: SubAgentRun, tally: SubAgentTally): LoopConversation {
  const { profile, call } = run;
  const messages: ChatMessage[] = [{ role: 'user', content: taskMessage(run.request) }];
  return {
    async next(tools) {
      const system = subAgentSystemPrompt(profile, new Date(deps.clock.now()), deps.timezone);
      const built = await buildContext({
        system,
        session: { id: `${state.sessionId}:${profile.name}:${call.id}`, summarizedUpTo: 0 },
        history: messages,
        budgetTokens: deps.limits.contextTokens,
        tools,
        counter: deps.counter,
        // One task is one turn: the window trims its tool results, never folds it into a summary.
        summarize: () => Promise.reject(new Error('a sub-agent has no earlier turns to summarise')),
        saveSummary: async () => undefined,
        log: deps.log,
      });
      // What the parent had read before it delegated still counts here.
      const sources = [...new Set([...call.sources, ...outsideSourcesIn(built.messages)])];
      return { messages: built.messages, gate: { sources, userText: call.userText, seen: built.messages } };
    },
    async append(added) {
      for (const m of added) {
        if (m.role === 'tool' && m.outsideSource && !tally.sources.includes(m.outsideSource)) tally.sources.push(m.outsideSource);
      }
      messages.push(...added);
    },
  };
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
