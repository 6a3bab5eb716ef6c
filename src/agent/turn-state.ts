import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { ModelError, ModelProvider } from '../runtime/provider/provider.js';
import type { Conversation, Speaker } from '../basics/types.js';
import type { ToolContext } from '../capabilities/toolkit/tool-api.js';
import type { ToolRegistry } from '../capabilities/toolkit/registry.js';
import type { ToolExecutor } from '../capabilities/toolkit/executor.js';
import type { SkillSummary } from '../capabilities/skills/skill-library.js';
import type { SessionStore } from '../state/sessions/session-store.js';
import type { ApprovalRecord, ApprovalStore } from '../state/approvals/approval-store.js';
import type { Tracer } from '../runtime/trace/tracer.js';
import type { TokenCounter } from '../runtime/context/token-counter.js';
import type { FactStore } from '../state/memory/fact-store.js';
import type { DailyUsage, Payer, UsageMeter } from '../state/usage/usage-meter.js';
import type { GroundingMode } from './grounding.js';
import type { TurnImages } from './turn-images.js';
import type { PolicyBook } from '../settings/policy-book.js';
import type { AuditLog } from '../state/audit/audit-log.js';
import type { ChannelPolicy } from '../settings/channel-policies.js';

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
  /** HERMES_GROUNDING: absent = off (benchmarks and harnesses that do not set it). */
  grounding?: GroundingMode;
  /** Whether this conversation can be read (read_channel_history is offered only then). */
  canReadHistory?(conversation: Conversation): boolean;
  /** Images in model calls (HERMES_VISION, turn-images.ts); absent = images are described, never shown. */
  images?: TurnImages;
  /** Daily token accounting (HERMES_USER_DAILY_TOKENS); absent = nothing counted (benchmarks). */
  usage?: { meter: UsageMeter; payer(speaker: Speaker, conversation?: Conversation): Payer };
  /**
   * Builds the per-call tool context (facts, reminders, net scoped to this speaker and place).
   * `call` is given for calls the turn's own model made (sub-agents start from it).
   */
  toolContext(state: TurnState, signal: AbortSignal, toolName: string, call?: CallInfo): ToolContext;
  /** The usable skills (names and descriptions), listed in the system prompt while use_skill is offered. */
  skills?(): readonly SkillSummary[];
  /** Channel policies (hermes.config.yaml `channels:`), asked at every step; absent = none. */
  policies?: PolicyBook;
  /** The audit record: a tool call a channel policy refused is written there. */
  audit?: Pick<AuditLog, 'record'>;
}

/** The channel policy in force where the turn runs, now (a reload applies from the next step). */
export function policyFor(deps: Pick<TurnDeps, 'policies'>, state: Pick<TurnState, 'conversation'>): ChannelPolicy | undefined {
  return deps.policies?.at(state.conversation);
}

/** One call of this turn's model, as a sub-agent started from it inherits it (src/agent/subagents). */
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
 * The provider every model call of this turn goes through — steps, running summaries and anything
 * a tool runs on the turn's behalf (sub-agents): the speaker's tokens are counted and their daily
 * budget enforced in this one place.
 */
export function turnProvider(deps: Pick<TurnDeps, 'provider' | 'usage'>, state: Pick<TurnState, 'speaker' | 'conversation'>): ModelProvider {
  return deps.usage ? deps.usage.meter.provider(deps.provider, deps.usage.payer(state.speaker, state.conversation)) : deps.provider;
}
