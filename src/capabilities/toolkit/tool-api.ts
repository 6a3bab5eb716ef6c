import type { z } from 'zod';
import type { Logger } from 'pino';
import type { Clock } from '../../basics/clock.js';
import type { ChatMessage, Conversation, ImageRef, Speaker } from '../../basics/types.js';
import type { NetClient } from '../net/net-client.js';
import type { UserFacts } from '../../state/memory/user-facts.js';
import type { UserReminders } from '../../state/reminders/user-reminders.js';
import type { UserSchedules } from '../../state/schedules/user-schedules.js';
import type { ContextRead } from '../../basics/ports.js';

/** The conversation the request came from, and only that one: a tool cannot name another. */
export interface ConversationHistory {
  /** Recent messages, oldest first; `before` is a message id from an earlier read. Never throws. */
  read(opts: { limit: number; before?: string }): Promise<ContextRead>;
}
import type { SessionWorkspace } from '../workspace/workspace.js';
import type { AgentProfile } from '../../settings/agent-profiles.js';

export type ToolCategory = 'general' | 'memory' | 'network' | 'reminders' | 'schedules' | 'admin';

// The domain types live with their domains; tools take them from here, the tool API.
export type { FactView, UserFacts } from '../../state/memory/user-facts.js';
export type { ReminderView, UserReminders } from '../../state/reminders/user-reminders.js';
export type { ScheduleInput, SchedulePreview, ScheduleView, UserSchedules } from '../../state/schedules/user-schedules.js';

/** What the delegate tool asks for: one task for one agent profile (the tool owns the profiles it offers). */
export interface DelegationRequest {
  profile: AgentProfile;
  task: string;
  context?: string;
}

/**
 * Starting sub-agents on behalf of the call being run (src/agent/subagents). Absent inside a sub-agent
 * (one level only) and where no profile is enabled. `run` resolves with the sub-agent's answer, or
 * rejects with a message written for the model when it could not finish. Pass the tool's own
 * `ctx.signal`: it fires on `/hermes stop`, shutdown and the delegate call's time limit alike.
 */
export interface SubAgents {
  run(request: DelegationRequest, signal: AbortSignal): Promise<ToolResult>;
}

export interface ToolContext {
  signal: AbortSignal;
  clock: Clock;
  speaker: Speaker;
  isAdmin: boolean;
  conversation: Conversation;
  facts: UserFacts;
  reminders: UserReminders;
  /** Absent where scheduled tasks are not wired (some tests, the eval harness). */
  schedules?: UserSchedules;
  net: NetClient;
  /** Reading the current conversation; absent where the platform has nothing to read (the terminal). */
  history?: ConversationHistory;
  /** This tool's own settings from hermes.config.(yaml|json) `tools.<name>.settings`. */
  settings: Record<string, unknown>;
  /** Deployment-wide defaults tools may use. */
  defaults: { timezone: string };
  log: Logger;
  /** The session's folder; absent where a tool runs outside any session. */
  workspace?: SessionWorkspace;
  /** Posts a file into the conversation the request came from; absent where the platform cannot. */
  sendFile?(file: { name: string; data: Buffer; path: string; comment?: string }): Promise<void>;
  /** Tells the person something right away, in the conversation the request came from (a limit their request ran into); never rejects. */
  notice?(text: string): Promise<void>;
  /** Sub-agents (the delegate tool); absent inside a sub-agent. */
  agents?: SubAgents;
  /** Images for the model (view_image): the largest one shown (HERMES_MAX_IMAGE_MB in bytes). */
  images?: { maxBytes: number };
  /** Whether the channel policy lets this skill be used here (absent: every skill may). */
  skillAllowed?(name: string): boolean;
}

/**
 * A tool returns text for the model, or a summary for the model plus raw data kept only in traces.
 * `outsideSource` says the summary is text from outside the conversation (a page, search results,
 * other people's messages): the executor then wraps it as untrusted data naming that source, and
 * the turn counts as having read outside text (see src/capabilities/toolkit/outside-gate.ts). `failed` makes the
 * summary a tool error (an MCP server's `isError`) that still keeps its outside-text wrapping.
 */
export type ToolResult =
  | string
  | {
      summary: string;
      raw?: unknown;
      outsideSource?: string;
      failed?: boolean;
      /** Shown to the model as images after the results (view_image); they count as outside content. */
      images?: ImageRef[];
    };

/**
 * What running a tool does beyond answering:
 * - none: reads or computes only (the default)
 * - durable: changes state that outlives the turn (memory, reminders, schedules)
 * - outward: sends something out of the bot (webhooks, file sends, requests that carry data)
 * Once a turn has read outside text, durable and outward calls ask a person first.
 */
export type ToolEffect = 'none' | 'durable' | 'outward';

/** What an effect rule may look at besides the arguments. */
export interface EffectInput {
  /** The requesting user's own words in this turn (to tell data they wrote from data they did not). */
  userText: string;
  /** The messages the model saw before asking for the call (earlier results, e.g. pages it fetched). */
  seen: readonly ChatMessage[];
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: S;
  /**
   * The JSON Schema the model sees, for tools whose schema comes from elsewhere (an MCP server's
   * inputSchema); without it the schema is derived from `input`. The tool's owner validates then.
   */
  parameters?: Record<string, unknown>;
  /** Pause for a human before running. A function decides from the (validated) arguments. */
  needsApproval?: boolean | ((args: z.infer<S>) => boolean);
  /** Default HERMES_TOOL_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Cap on the text the model sees; default 2,000 characters. */
  maxResultChars?: number;
  category?: ToolCategory;
  /** True when running twice would do something twice (a timeout then reads "outcome unknown"). */
  sideEffects?: boolean;
  /** Default 'none'. A function decides from the validated arguments (a fetch of a URL nobody wrote is outward). */
  effect?: ToolEffect | ((args: z.infer<S>, input: EffectInput) => ToolEffect);
  /** Only offered where the conversation can be read (not in the terminal chat). */
  needsConversationHistory?: boolean;
  /** Only offered while the model is shown images (HERMES_VISION; src/runtime/vision/vision-support.ts). */
  needsVision?: boolean;
  /**
   * Words for the approval prompt, shown above the exact arguments (e.g. a schedule's next run
   * times). Throwing refuses the call before anyone is asked; the message goes to the model.
   */
  describeCall?: (args: z.infer<S>, ctx: ToolContext) => string | Promise<string>;
  /**
   * The call belongs to the speaking user (facts, reminders, schedules): its arguments and result
   * are shown to the model only on that user's turns, never on another participant's in a shared thread.
   */
  private?: boolean;
  /**
   * Checks that need no person (network rules, argument checks that read the world), run BEFORE an
   * approval prompt is shown: nobody should approve what would be refused anyway. Throw to refuse;
   * the message reaches the model (a NetRefusedError reads as "refused"). Run again at run time.
   */
  check?: (args: z.infer<S>, ctx: ToolContext) => Promise<void>;
  /** Whether the tool can be offered at all (web_search without a backend cannot). */
  isAvailable?: (settings: Record<string, unknown>) => boolean;
  run(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
}

// Tools are stored heterogeneously; `any` here is the variance escape hatch for the input type only.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = ToolDefinition<any>;

export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(def.name)) {
    throw new Error(`tool name "${def.name}" must be 1-64 letters, digits, _ or -`);
  }
  return def;
}
