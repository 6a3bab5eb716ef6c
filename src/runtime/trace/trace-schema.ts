import * as z from 'zod';
import type { ChatMessage } from '../../basics/types.js';
import type { ModelResponse } from '../provider/provider.js';

/**
 * The trace records: one JSONL line per event, every line carrying the turn id so a turn can be
 * read back whole. This schema is the one description of them: the agent loop and the gateway
 * write records of these types (the tracer checks them), and every reader — `npm run stats`, the
 * dashboard's index and turn page, replay and eval, OpenTelemetry — reads them through
 * `parseTraceLine` instead of guessing at loose JSON.
 *
 * Objects are loose (unknown keys are kept, not stripped): a reader of an older build must not
 * drop what a newer one added.
 */

const count = z.number().int().nonnegative();
const ms = z.number().nonnegative();

/**
 * Set on the model and tool calls a sub-agent made: they belong to the parent turn (`turnId`), under
 * the parent's `delegate` call `parentCallId`, made by the agent named `agent`. Absent on the main agent's.
 */
const subAgentMark = {
  agent: z.string().optional(),
  parentCallId: z.string().optional(),
};

const tokenUsage = z.object({ promptTokens: count, completionTokens: count });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A message as it was sent to the model (ChatMessage, after redaction): checked for having a role
 * and kept whole, since the turn page and replay show and resend it as it was (the writer's type
 * already holds the role to the four known ones).
 */
const tracedMessage = z.custom<ChatMessage>((v) => isObject(v) && typeof v.role === 'string', { message: 'not a chat message (no role)' });

/**
 * The model's response as the provider returned it (null when the call failed). Only its being an
 * object is checked: readers that need its parts look at them, and an older record's response may
 * lack some.
 */
const tracedResponse = z.custom<Partial<ModelResponse>>((v) => isObject(v), { message: 'not a model response object' });

export const turnStartRecord = z.looseObject({
  type: z.literal('turn_start'),
  turnId: z.string(),
  sessionId: z.string(),
  platform: z.string(),
  userKey: z.string(),
  text: z.string(),
});

/**
 * `model` is the model that answered; `requestModel` the one asked for (they differ behind aliases and routers).
 *
 * `messages` is the prompt as sent. In a file, a line with `promptFrom` holds only the messages after
 * the first `keep` of the prompt of step `step` of the same turn and agent run (trace-prompts.ts):
 * readers join them back (`createPromptJoiner`) and get the whole prompt without `promptFrom`, or
 * the line's messages with `promptIncomplete` when that earlier line is missing.
 */
export const modelCallRecord = z.looseObject({
  type: z.literal('model_call'),
  turnId: z.string(),
  step: count,
  model: z.string(),
  requestModel: z.string().optional(),
  messages: z.array(tracedMessage),
  promptFrom: z.looseObject({ step: count, keep: count }).optional(),
  promptIncomplete: z.boolean().optional(),
  tools: z.array(z.string()),
  response: tracedResponse.nullable(),
  usage: tokenUsage.optional(),
  latencyMs: ms,
  error: z.string().optional(),
  /** The answer stated these figures without a source and the model was asked again (agent/grounding.ts). */
  grounding: z.looseObject({ claims: z.array(z.string()) }).optional(),
  ...subAgentMark,
});

/** `startedAt` (epoch ms, absent when it never ran): calls of one response run at once or in turn, so the record's time says little about when each began. */
export const toolCallRecord = z.looseObject({
  type: z.literal('tool_call'),
  turnId: z.string(),
  callId: z.string(),
  name: z.string(),
  args: z.unknown(),
  ok: z.boolean(),
  result: z.string(),
  raw: z.unknown().optional(),
  startedAt: z.number().optional(),
  durationMs: ms,
  errorKind: z.string().optional(),
  ...subAgentMark,
});

/** A sub-agent's run, ended: `callId` is the parent's `delegate` call; its tokens are in the parent's turn_end too. */
export const subagentRecord = z.looseObject({
  type: z.literal('subagent'),
  turnId: z.string(),
  callId: z.string(),
  agent: z.string(),
  outcome: z.string(),
  steps: count,
  durationMs: ms,
  promptTokens: count,
  completionTokens: count,
});

export const approvalRecord = z.looseObject({
  type: z.literal('approval'),
  turnId: z.string(),
  approvalId: z.string(),
  tool: z.string(),
  status: z.string(),
  by: z.string().optional(),
});

/** `outcome`: a TurnEnd kind (`model_error:<kind>` for model errors) or `error` (the turn threw). */
export const turnEndRecord = z.looseObject({
  type: z.literal('turn_end'),
  turnId: z.string(),
  outcome: z.string(),
  steps: count,
  durationMs: ms,
  promptTokens: count,
  completionTokens: count,
});

/** Someone was turned away before (or instead of) a model call: HERMES_ALLOW, rate or daily tokens. */
export const refusalRecord = z.looseObject({
  type: z.literal('refusal'),
  turnId: z.string().optional(),
  reason: z.string(),
  source: z.string(),
  platform: z.string(),
  userKey: z.string(),
});

export const traceEventSchema = z.discriminatedUnion('type', [turnStartRecord, modelCallRecord, toolCallRecord, subagentRecord, approvalRecord, turnEndRecord, refusalRecord]);

/** A record as it is written (the tracer adds `ts`). */
export type TraceEvent = z.input<typeof traceEventSchema>;
export type TraceType = TraceEvent['type'];
export type TraceEventOf<T extends TraceType> = Extract<TraceEvent, { type: T }>;
export type SubAgentMark = Pick<TraceEventOf<'model_call'>, 'agent' | 'parentCallId'>;

/** A record as it is read back: `ts` is when it was written (ISO 8601). */
export type TraceRecord = z.output<typeof traceEventSchema> & { ts: string };
export type TraceRecordOf<T extends TraceType> = Extract<TraceRecord, { type: T }>;

const withTs = z.looseObject({ ts: z.string() });

const isCount = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0;
const isMs = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const optString = (v: unknown): boolean => v === undefined || typeof v === 'string';

/**
 * Every record type checked by hand for what the schemas above require of it: true only when the
 * zod parse would succeed, so a record it passes needs no parse (a parse copies the record and
 * every message in it; a turn's two small records cost as much through zod as its five model
 * calls by hand). Anything it is unsure of goes to the schema, which stays the one judge of what
 * is wrong (test/core/trace-schema.test.ts holds the two to the same answers).
 */
export function plainlyValid(event: unknown): boolean {
  if (!isObject(event)) return false;
  if (event.type === 'refusal') {
    return optString(event.turnId) && typeof event.reason === 'string' && typeof event.source === 'string' && typeof event.platform === 'string' && typeof event.userKey === 'string';
  }
  if (typeof event.turnId !== 'string') return false;
  switch (event.type) {
    case 'turn_start':
      return typeof event.sessionId === 'string' && typeof event.platform === 'string' && typeof event.userKey === 'string' && typeof event.text === 'string';
    case 'turn_end':
      return typeof event.outcome === 'string' && isCount(event.steps) && isMs(event.durationMs) && isCount(event.promptTokens) && isCount(event.completionTokens);
    case 'subagent':
      return typeof event.callId === 'string' && typeof event.agent === 'string' && typeof event.outcome === 'string' && isCount(event.steps) && isMs(event.durationMs) && isCount(event.promptTokens) && isCount(event.completionTokens);
    case 'approval':
      return typeof event.approvalId === 'string' && typeof event.tool === 'string' && typeof event.status === 'string' && optString(event.by);
  }
  if (!optString(event.agent) || !optString(event.parentCallId)) return false;
  if (event.type === 'model_call') {
    const { messages, tools, response, usage, grounding, promptFrom } = event;
    return (
      (promptFrom === undefined || (isObject(promptFrom) && isCount(promptFrom.step) && isCount(promptFrom.keep))) &&
      (event.promptIncomplete === undefined || typeof event.promptIncomplete === 'boolean') &&
      isCount(event.step) && typeof event.model === 'string' && optString(event.requestModel) &&
      Array.isArray(messages) && messages.every((m) => isObject(m) && typeof m.role === 'string') &&
      Array.isArray(tools) && tools.every((t) => typeof t === 'string') &&
      (response === null || isObject(response)) &&
      (usage === undefined || (isObject(usage) && isCount(usage.promptTokens) && isCount(usage.completionTokens))) &&
      isMs(event.latencyMs) && optString(event.error) &&
      (grounding === undefined || (isObject(grounding) && Array.isArray(grounding.claims) && grounding.claims.every((c) => typeof c === 'string')))
    );
  }
  if (event.type === 'tool_call') {
    return (
      typeof event.callId === 'string' && typeof event.name === 'string' && event.args !== undefined && typeof event.ok === 'boolean' && typeof event.result === 'string' &&
      (event.startedAt === undefined || (typeof event.startedAt === 'number' && Number.isFinite(event.startedAt))) &&
      isMs(event.durationMs) && optString(event.errorKind)
    );
  }
  return false;
}

/** Problems of a record that does not match its type, one line each (the tracer's check, tests). */
export function traceEventProblems(event: unknown): string[] {
  if (plainlyValid(event)) return [];
  const r = traceEventSchema.safeParse(event);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`);
}

/**
 * One line of a trace file, or undefined when it is not a record of a known type (a torn last line
 * after a crash, a record type this build does not know): readers skip such lines.
 */
export function parseTraceLine(line: string): TraceRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return parseTraceValue(value);
}

/** As parseTraceLine, for a value already parsed from JSON. */
export function parseTraceValue(value: unknown): TraceRecord | undefined {
  const ts = withTs.safeParse(value);
  if (!ts.success) return undefined;
  const r = traceEventSchema.safeParse(value);
  return r.success ? { ...r.data, ts: ts.data.ts } : undefined;
}
