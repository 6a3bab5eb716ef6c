/** One JSONL line per event; every line carries the turn id so a turn can be read back whole. */
export type TraceEvent =
  | { type: 'turn_start'; turnId: string; sessionId: string; platform: string; userKey: string; text: string }
  /** `model` is the model that answered; `requestModel` the one asked for (they differ behind aliases and routers). */
  | ({ type: 'model_call'; turnId: string; step: number; model: string; requestModel?: string; messages: unknown; tools: string[]; response: unknown; usage?: { promptTokens: number; completionTokens: number }; latencyMs: number; error?: string; grounding?: { claims: string[] } } & SubAgentMark)
  /** `startedAt` (epoch ms, absent when it never ran): calls of one response run at once or in turn, so the record's time says little about when each began. */
  | ({ type: 'tool_call'; turnId: string; callId: string; name: string; args: unknown; ok: boolean; result: string; raw?: unknown; startedAt?: number; durationMs: number; errorKind?: string } & SubAgentMark)
  /** A sub-agent's run, ended: `callId` is the parent's `delegate` call; its tokens are in the parent's turn_end too. */
  | { type: 'subagent'; turnId: string; callId: string; agent: string; outcome: string; steps: number; durationMs: number; promptTokens: number; completionTokens: number }
  | { type: 'approval'; turnId: string; approvalId: string; tool: string; status: string; by?: string }
  | { type: 'turn_end'; turnId: string; outcome: string; steps: number; durationMs: number; promptTokens: number; completionTokens: number }
  /** Someone was turned away before (or instead of) a model call: HERMES_ALLOW, rate or daily tokens. */
  | { type: 'refusal'; turnId?: string; reason: string; source: string; platform: string; userKey: string };

/**
 * Set on the model and tool calls a sub-agent made: they belong to the parent turn (`turnId`), under
 * the parent's `delegate` call `parentCallId`, made by the agent named `agent`. Absent on the main agent's.
 */
export interface SubAgentMark {
  agent?: string;
  parentCallId?: string;
}

