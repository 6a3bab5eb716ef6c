import type { CallInfo, TurnDeps, TurnState } from '../turn-state.js';
import type { SubAgents, ToolResult } from '../../capabilities/toolkit/tool-api.js';
import { runSubAgent, type SubAgentEnd, type SubAgentTally } from './run-subagent.js';
import { answerSource, cappedAnswer, SUBAGENT_MODEL_TEXT, SUBAGENT_USER_TEXT } from './subagent-text.js';
import { createTurnSlots } from './turn-slots.js';

export interface SubAgentsDeps {
  /** The parent turns' dependencies (read when a delegation starts: the core wires them after this). */
  turn(): TurnDeps;
  /** HERMES_MAX_PARALLEL_AGENTS */
  maxParallel: number;
}

/**
 * Starts sub-agents for the delegate tool. A run's model and tool calls are traced under the parent
 * turn with the agent's name and the parent call's id, then one `subagent` record sums it up; its
 * tokens are added to the parent turn (so they show in the turn's end record, `/hermes status` and
 * `npm run stats`) and were charged to the speaker's daily budget call by call.
 */
export function createSubAgents(deps: SubAgentsDeps) {
  const slots = createTurnSlots(deps.maxParallel);

  return {
    /** The `agents` member of the tool context for one call of a parent turn. */
    forCall(state: TurnState, call: CallInfo): SubAgents {
      return {
        async run(request, signal): Promise<ToolResult> {
          const { profile } = request;
          const turn = deps.turn();
          if (slots.full(state.turnId)) call.progress(SUBAGENT_USER_TEXT.waiting(profile.name, deps.maxParallel));
          let release: () => void;
          try {
            release = await slots.acquire(state.turnId, signal);
          } catch {
            throw new Error(SUBAGENT_MODEL_TEXT.cancelled(profile.name));
          }
          const started = turn.clock.now();
          const tally: SubAgentTally = { stepsUsed: 0, promptTokens: 0, completionTokens: 0, sources: [] };
          let end: SubAgentEnd | undefined;
          try {
            end = await runSubAgent(turn, state, { profile, request, call, signal }, tally);
          } finally {
            release();
            // The parent turn pays for its sub-agents: its end record carries their tokens.
            state.promptTokens += tally.promptTokens;
            state.completionTokens += tally.completionTokens;
            const outcome = end === undefined ? 'error' : end.kind === 'model_error' ? `model_error:${end.error.kind}` : end.kind;
            turn.tracer.record({ type: 'subagent', turnId: state.turnId, callId: call.id, agent: profile.name, outcome, steps: tally.stepsUsed, durationMs: turn.clock.now() - started, promptTokens: tally.promptTokens, completionTokens: tally.completionTokens });
            if (end && end.kind !== 'answered') call.progress(SUBAGENT_USER_TEXT.stopped(profile.name, end.kind));
          }
          return toResult(profile.name, end, tally);
        },
      };
    },
  };
}

/** The tool result for the parent: the answer (outside text when the sub-agent read some), or a thrown model-facing error. */
function toResult(agent: string, end: SubAgentEnd, tally: SubAgentTally): ToolResult {
  switch (end.kind) {
    case 'answered': {
      const summary = cappedAnswer(agent, end.text || SUBAGENT_MODEL_TEXT.empty(agent));
      const raw = { agent, steps: tally.stepsUsed, promptTokens: tally.promptTokens, completionTokens: tally.completionTokens };
      // Built from pages or other people's words: to the parent it is outside text, and the gate stays shut.
      return tally.sources.length > 0 ? { summary, raw, outsideSource: answerSource(agent, tally.sources) } : { summary, raw };
    }
    case 'step_limit':
      throw new Error(SUBAGENT_MODEL_TEXT.stepLimit(agent, tally.stepsUsed));
    case 'model_error':
      throw new Error(SUBAGENT_MODEL_TEXT.modelError(agent, end.error.message));
    case 'budget_exhausted':
      throw new Error(SUBAGENT_MODEL_TEXT.budget(agent));
    case 'aborted':
      throw new Error(SUBAGENT_MODEL_TEXT.cancelled(agent));
  }
}
