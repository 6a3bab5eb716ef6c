import type { ToolOutcome } from '../capabilities/toolkit/executor.js';
import type { SubAgentMark, TraceEvent } from '../runtime/trace/trace-schema.js';

/** The trace record of one answered tool call, from wherever it ran (a model step, an approved call). */
export function toolCallRecord(turnId: string, o: ToolOutcome, args: unknown, mark?: SubAgentMark): Extract<TraceEvent, { type: 'tool_call' }> {
  return { type: 'tool_call', turnId, callId: o.callId, name: o.name, args, ok: o.ok, result: o.content, raw: o.raw, startedAt: o.startedAt, durationMs: o.durationMs, errorKind: o.errorKind, ...mark };
}
