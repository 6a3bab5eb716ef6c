import { createHash } from 'node:crypto';
import type { TraceEvent } from '../../runtime/trace/tracer.js';
import { toInputMessages, toOutputMessages, toSystemInstructions, type ResponseLike } from './genai-messages.js';

/**
 * Turns the trace records the agent already writes into OpenTelemetry spans, named and described
 * the way the GenAI semantic conventions say, so any trace viewer shows a turn as
 * `invoke_agent hermes` › `chat <model>` / `execute_tool <name>` without knowing this project;
 * a sub-agent's run is `invoke_agent <agent>` under the `execute_tool delegate` that started it.
 *
 * Why from the records and not from the loop: the records are the one account of a turn (the
 * dashboard reads the same ones), every record kind a feature adds reaches this file without the
 * loop changing, and the loop pays nothing for telemetry it did not ask for.
 *
 * Ids are derived from the turn id rather than remembered: a turn paused for an approval may end
 * in another process after a restart, and its spans still land in the same trace under the same
 * parent. A record's children may reach the collector before their parent; viewers expect that.
 */

export type SpanKindName = 'internal' | 'client';
export type AttributeValue = string | number | boolean | string[];

export interface PlannedSpan {
  name: string;
  kind: SpanKindName;
  traceId: string;
  /** Set for spans others point at (turns, sub-agents); the SDK picks a random id otherwise. */
  spanId?: string;
  parentSpanId?: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  events?: Array<{ name: string; atMs: number; attributes: Record<string, AttributeValue> }>;
  /** Marks the span failed: `type` becomes error.type (low cardinality), `message` the status text. */
  error?: { type: string; message?: string };
}

export interface SpanPlannerOptions {
  /** HERMES_OTEL_CONTENT: messages, arguments and results as attributes (redacted). */
  content: boolean;
  /** The trace redactor: a value in, its JSON text with secrets removed out. */
  redact: (value: unknown) => string;
  /** The model server's address (server.address / server.port on model spans). */
  server?: { address: string; port?: number };
  /** Turns whose start or sub-agents are remembered until their end; older ones are forgotten. */
  maxOpenTurns?: number;
}

export interface SpanPlanner {
  /** The spans one record completes (often none). `atMs` is when it was recorded. Never throws. */
  plan(event: TraceEvent, atMs: number): PlannedSpan[];
}

/** The name the main agent has on its turn spans (gen_ai.agent.name). */
export const MAIN_AGENT = 'hermes';
/** Whose API the model calls speak, as the conventions name it (any OpenAI-compatible server). */
export const PROVIDER = 'openai';
const MAX_APPROVAL_EVENTS = 50;
const MAX_AGENTS_PER_TURN = 100;

/**
 * A sub-agent's model and tool records carry its name and the parent's `delegate` call id
 * (`agent`, `parentCallId`); the main agent's carry neither. When the run ends a `subagent` record
 * says so (`callId`, `agent`, `outcome`, `durationMs`, tokens). Read loosely, so records written
 * before or without these fields still export.
 */
interface AgentRef {
  name: string;
  runKey: string;
}

/** A sub-agent run seen only through its children so far: its span is drawn around them at turn end. */
interface ProvisionalRun {
  ref: AgentRef;
  startMs: number;
  endMs: number;
  inputTokens: number;
  outputTokens: number;
}

interface OpenTurn {
  start?: Extract<TraceEvent, { type: 'turn_start' }>;
  approvals: NonNullable<PlannedSpan['events']>;
  runs: Map<string, ProvisionalRun>;
  /** `delegate` calls whose run span was sent: their tool span gets the id that run points at. */
  delegateCalls: Set<string>;
  lastOutput?: ResponseLike;
}

export function traceIdOf(turnId: string): string {
  return digest(`trace:${turnId}`, 32);
}

export function turnSpanIdOf(turnId: string): string {
  return digest(`turn:${turnId}`, 16);
}

function agentSpanIdOf(turnId: string, runKey: string): string {
  return digest(`agent:${turnId}:${runKey}`, 16);
}

function delegateSpanIdOf(turnId: string, callId: string): string {
  return digest(`delegate:${turnId}:${callId}`, 16);
}

function digest(text: string, hexChars: number): string {
  const hex = createHash('sha256').update(text).digest('hex').slice(0, hexChars);
  // An all-zero id is invalid in OpenTelemetry; sha256 giving one is as good as impossible, but cheap to rule out.
  return /^0+$/.test(hex) ? `1${hex.slice(1)}` : hex;
}

export function createSpanPlanner(opts: SpanPlannerOptions): SpanPlanner {
  const maxOpen = opts.maxOpenTurns ?? 1000;
  const open = new Map<string, OpenTurn>();

  function turn(turnId: string): OpenTurn {
    let t = open.get(turnId);
    if (!t) {
      t = { approvals: [], runs: new Map(), delegateCalls: new Set() };
      open.set(turnId, t);
      // Bounded: a turn that never ends (a crash, an approval nobody answers) is forgotten oldest first.
      if (open.size > maxOpen) open.delete(open.keys().next().value as string);
    }
    return t;
  }

  /** Content attributes are the redactor's JSON text; a plain string goes back to being one. */
  const json = (value: unknown) => opts.redact(value);
  const plainText = (value: string) => JSON.parse(opts.redact(value)) as string;

  /** The span a model or tool record belongs under: its sub-agent's, else the turn's. */
  function parentOf(turnId: string, ref: AgentRef | undefined, startMs: number, endMs: number): string {
    if (!ref) return turnSpanIdOf(turnId);
    const t = turn(turnId);
    let a = t.runs.get(ref.runKey);
    if (!a && t.runs.size < MAX_AGENTS_PER_TURN) {
      a = { ref, startMs, endMs, inputTokens: 0, outputTokens: 0 };
      t.runs.set(ref.runKey, a);
    }
    if (a) {
      a.startMs = Math.min(a.startMs, startMs);
      a.endMs = Math.max(a.endMs, endMs);
    }
    return agentSpanIdOf(turnId, ref.runKey);
  }

  function modelSpan(e: Extract<TraceEvent, { type: 'model_call' }>, atMs: number): PlannedSpan {
    const ref = agentOf(e);
    const requestModel = stringField(e, 'requestModel') ?? e.model;
    const startMs = atMs - Math.max(0, e.latencyMs);
    const response = isResponse(e.response) ? e.response : undefined;
    const attributes: Record<string, AttributeValue> = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': PROVIDER,
      // The older name, still what many viewers read.
      'gen_ai.system': PROVIDER,
      'gen_ai.request.model': requestModel,
      'hermes.turn.id': e.turnId,
      'hermes.step': e.step,
    };
    if (ref) attributes['gen_ai.agent.name'] = ref.name;
    if (opts.server) {
      attributes['server.address'] = opts.server.address;
      if (opts.server.port !== undefined) attributes['server.port'] = opts.server.port;
    }
    if (response) {
      attributes['gen_ai.response.model'] = response.model || e.model;
      attributes['gen_ai.response.finish_reasons'] = [response.finishReason];
    }
    if (e.usage) {
      attributes['gen_ai.usage.input_tokens'] = e.usage.promptTokens;
      attributes['gen_ai.usage.output_tokens'] = e.usage.completionTokens;
    }
    if (opts.content) {
      if (Array.isArray(e.messages)) {
        const system = toSystemInstructions(e.messages);
        if (system.length) attributes['gen_ai.system_instructions'] = json(system);
        attributes['gen_ai.input.messages'] = json(toInputMessages(e.messages));
      }
      if (response) attributes['gen_ai.output.messages'] = json(toOutputMessages(response));
    }
    const span: PlannedSpan = {
      name: `chat ${requestModel}`,
      kind: 'client',
      traceId: traceIdOf(e.turnId),
      parentSpanId: parentOf(e.turnId, ref, startMs, atMs),
      startMs,
      endMs: atMs,
      attributes,
    };
    if (e.error) span.error = { type: errorKindOf(e.error), message: plainText(e.error) };
    const t = ref || opts.content ? turn(e.turnId) : undefined;
    if (t && ref) {
      const a = t.runs.get(ref.runKey);
      if (a) {
        a.inputTokens += e.usage?.promptTokens ?? 0;
        a.outputTokens += e.usage?.completionTokens ?? 0;
      }
    } else if (t && response) {
      t.lastOutput = response;
    }
    return span;
  }

  function toolSpan(e: Extract<TraceEvent, { type: 'tool_call' }>, atMs: number): PlannedSpan {
    const ref = agentOf(e);
    const startedAt = numberField(e, 'startedAt');
    const startMs = startedAt ?? atMs - Math.max(0, e.durationMs);
    const endMs = startMs + Math.max(0, e.durationMs);
    const attributes: Record<string, AttributeValue> = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': e.name,
      'gen_ai.tool.call.id': e.callId,
      'gen_ai.tool.type': 'function',
      'hermes.turn.id': e.turnId,
    };
    if (ref) attributes['gen_ai.agent.name'] = ref.name;
    if (opts.content) {
      attributes['gen_ai.tool.call.arguments'] = json(e.args);
      attributes['gen_ai.tool.call.result'] = plainText(e.result);
    }
    const t = open.get(e.turnId);
    const delegated = t?.delegateCalls.delete(e.callId) === true;
    const span: PlannedSpan = {
      name: `execute_tool ${e.name}`,
      kind: 'internal',
      traceId: traceIdOf(e.turnId),
      ...(delegated && { spanId: delegateSpanIdOf(e.turnId, e.callId) }),
      parentSpanId: parentOf(e.turnId, ref, startMs, endMs),
      startMs,
      endMs,
      attributes,
    };
    if (!e.ok) span.error = { type: e.errorKind ?? 'failed' };
    return span;
  }

  /** A sub-agent run ended: its span, under the `delegate` call that started it (whose span comes later). */
  function runSpan(e: SubAgentEnd, atMs: number): PlannedSpan {
    const runKey = `${e.agent}:${e.callId}`;
    const t = turn(e.turnId);
    t.runs.delete(runKey);
    t.delegateCalls.add(e.callId);
    const span: PlannedSpan = {
      name: `invoke_agent ${e.agent}`,
      kind: 'internal',
      traceId: traceIdOf(e.turnId),
      spanId: agentSpanIdOf(e.turnId, runKey),
      parentSpanId: delegateSpanIdOf(e.turnId, e.callId),
      startMs: atMs - Math.max(0, e.durationMs),
      endMs: atMs,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': e.agent,
        'gen_ai.provider.name': PROVIDER,
        'gen_ai.usage.input_tokens': e.promptTokens,
        'gen_ai.usage.output_tokens': e.completionTokens,
        'hermes.turn.id': e.turnId,
        'hermes.agent.outcome': e.outcome,
        'hermes.agent.steps': e.steps,
      },
    };
    if (isFailure(e.outcome)) span.error = { type: e.outcome };
    return span;
  }

  function turnSpans(e: Extract<TraceEvent, { type: 'turn_end' }>, atMs: number): PlannedSpan[] {
    const t = open.get(e.turnId);
    open.delete(e.turnId);
    const traceId = traceIdOf(e.turnId);
    const spanId = turnSpanIdOf(e.turnId);
    const attributes: Record<string, AttributeValue> = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': MAIN_AGENT,
      'gen_ai.provider.name': PROVIDER,
      'gen_ai.usage.input_tokens': e.promptTokens,
      'gen_ai.usage.output_tokens': e.completionTokens,
      'hermes.turn.id': e.turnId,
      'hermes.turn.outcome': e.outcome,
      'hermes.turn.steps': e.steps,
    };
    const start = t?.start;
    if (start) {
      attributes['gen_ai.conversation.id'] = start.sessionId;
      attributes['hermes.platform'] = start.platform;
      attributes['user.id'] = start.userKey;
      if (opts.content) attributes['gen_ai.input.messages'] = json([{ role: 'user', parts: [{ type: 'text', content: start.text }] }]);
    }
    if (opts.content && t?.lastOutput && e.outcome === 'answered') attributes['gen_ai.output.messages'] = json(toOutputMessages(t.lastOutput));
    const turnSpan: PlannedSpan = {
      name: `invoke_agent ${MAIN_AGENT}`,
      kind: 'internal',
      traceId,
      spanId,
      startMs: atMs - Math.max(0, e.durationMs),
      endMs: atMs,
      attributes,
      ...(t?.approvals.length ? { events: t.approvals } : {}),
    };
    if (isFailure(e.outcome)) turnSpan.error = { type: e.outcome };
    // Runs that never said they ended (records without a `subagent` end): drawn around their calls.
    const agents = [...(t?.runs.values() ?? [])].map((a): PlannedSpan => ({
      name: `invoke_agent ${a.ref.name}`,
      kind: 'internal',
      traceId,
      spanId: agentSpanIdOf(e.turnId, a.ref.runKey),
      parentSpanId: spanId,
      startMs: a.startMs,
      endMs: a.endMs,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': a.ref.name,
        'gen_ai.provider.name': PROVIDER,
        'gen_ai.usage.input_tokens': a.inputTokens,
        'gen_ai.usage.output_tokens': a.outputTokens,
        'hermes.turn.id': e.turnId,
      },
    }));
    return [...agents, turnSpan];
  }

  return {
    plan(event, atMs) {
      try {
        const ended = subAgentEnd(event);
        if (ended) return [runSpan(ended, atMs)];
        switch (event.type) {
          case 'turn_start':
            turn(event.turnId).start = event;
            return [];
          case 'model_call':
            return [modelSpan(event, atMs)];
          case 'tool_call':
            return [toolSpan(event, atMs)];
          case 'approval': {
            const t = turn(event.turnId);
            if (t.approvals.length < MAX_APPROVAL_EVENTS) {
              t.approvals.push({
                name: 'hermes.approval',
                atMs,
                attributes: { 'gen_ai.tool.name': event.tool, 'hermes.approval.status': event.status, ...(event.by && { 'hermes.approval.by': event.by }) },
              });
            }
            return [];
          }
          case 'turn_end':
            return turnSpans(event, atMs);
          default:
            // Refusals (no turn ran) and record kinds added later: nothing to export yet.
            return [];
        }
      } catch {
        // A record this file does not understand must never cost the turn anything.
        return [];
      }
    },
  };
}

/** `error` means the turn broke; step limits, stops and budgets are outcomes, not failures. */
function isFailure(outcome: string): boolean {
  return outcome === 'error' || outcome.startsWith('model_error');
}

/** Model call errors are recorded as "<kind>: <message>". */
function errorKindOf(error: string): string {
  const m = /^([a-z_]+):/.exec(error);
  return m?.[1] ?? 'error';
}

function agentOf(e: TraceEvent): AgentRef | undefined {
  const name = stringField(e, 'agent');
  if (!name) return undefined;
  return { name, runKey: `${name}:${stringField(e, 'parentCallId') ?? ''}` };
}

interface SubAgentEnd {
  turnId: string;
  callId: string;
  agent: string;
  outcome: string;
  steps: number;
  durationMs: number;
  promptTokens: number;
  completionTokens: number;
}

/** The `subagent` record (sub-agents' end of run), read field by field. */
function subAgentEnd(e: object): SubAgentEnd | undefined {
  if ((e as { type?: unknown }).type !== 'subagent') return undefined;
  const turnId = stringField(e, 'turnId');
  const callId = stringField(e, 'callId');
  const agent = stringField(e, 'agent');
  if (!turnId || !callId || !agent) return undefined;
  return {
    turnId, callId, agent,
    outcome: stringField(e, 'outcome') ?? 'unknown',
    steps: numberField(e, 'steps') ?? 0,
    durationMs: numberField(e, 'durationMs') ?? 0,
    promptTokens: numberField(e, 'promptTokens') ?? 0,
    completionTokens: numberField(e, 'completionTokens') ?? 0,
  };
}

function stringField(e: object, key: string): string | undefined {
  const v = (e as Record<string, unknown>)[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function numberField(e: object, key: string): number | undefined {
  const v = (e as Record<string, unknown>)[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function isResponse(v: unknown): v is ResponseLike {
  return typeof v === 'object' && v !== null && typeof (v as { finishReason?: unknown }).finishReason === 'string';
}
