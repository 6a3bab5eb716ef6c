import type { ImageRef, ToolCall } from '../../basics/types.js';
import type { ToolResult } from './tool-api.js';

/**
 * What happened to one tool call. `content` is exactly what the model reads in the `tool`
 * message answering `callId`; `raw` and `args` are for traces only.
 */
export interface ToolOutcome {
  callId: string;
  name: string;
  ok: boolean;
  content: string;
  raw?: unknown;
  args?: unknown;
  /** When it began running (clock ms); absent for calls that never ran. */
  startedAt?: number;
  durationMs: number;
  errorKind?: ToolErrorKind;
  /** Set when `content` is outside text (wrapped as untrusted data): where it came from. */
  outsideSource?: string;
  /** Images the tool shows the model (view_image), by reference. */
  images?: ImageRef[];
}

/**
 * - unknown_tool: no visible tool has that name
 * - bad_json: the arguments were not JSON
 * - invalid_args: JSON, but not what the tool's schema accepts
 * - failed: the tool threw (or was cancelled mid-run)
 * - timeout: the tool ran past its time limit and was aborted
 * - refused: a safety rule (network rules, loop guard) stopped it
 * - not_run: it was never started (denied, expired, cancelled before it began)
 */
export type ToolErrorKind = 'unknown_tool' | 'bad_json' | 'invalid_args' | 'failed' | 'timeout' | 'refused' | 'not_run';

/** Model-facing texts of the executor, in one place. */
export const TOOL_MESSAGES = {
  unknownTool: (name: string, available: string[], closest: string | undefined) =>
    available.length === 0
      ? `There is no tool named "${name}", and no tools are available right now. Answer without tools.`
      : `There is no tool named "${name}".${closest ? ` Did you mean "${closest}"?` : ''} Available tools: ${available.join(', ')}.`,
  badJson: (name: string, problem: string, received: string) =>
    `The arguments for ${name} are not valid JSON (${problem}). Received: ${received}\n` +
    `Send the arguments again as one JSON object, for example {"name": "value"}.`,
  failed: (name: string, message: string) => `${name} failed: ${message}`,
  timeout: (name: string, ms: number, sideEffects: boolean) =>
    sideEffects
      ? `${name} timed out after ${ms} ms and was aborted. Its outcome is unknown: it may or may not have taken effect. Do not retry blindly; check first or tell the user.`
      : `${name} timed out after ${ms} ms and was aborted. It produced no result.`,
  cancelled: (name: string, sideEffects: boolean) =>
    sideEffects
      ? `${name} was cancelled while running. Its outcome is unknown: it may or may not have taken effect.`
      : `${name} was cancelled before it finished. It produced no result.`,
  argsTooLong: (name: string, chars: number, max: number) =>
    `${name} did not run: its arguments are ${chars} characters long, and one call may carry at most ${max}. Send a much shorter input (split the work, or summarise) instead.`,
  argsTooDeep: (name: string, max: number) =>
    `${name} did not run: its arguments are nested more than ${max} levels deep. Send a flatter JSON object.`,
  refusedBeforeApproval: (name: string, message: string) => `${name} did not run and nobody was asked to approve it: ${message}`,
  deniedByPolicy: (name: string) =>
    `${name} did not run: the policy of this channel does not allow it here (an operator set this in hermes.config.yaml). Do not try it again or another way around; tell the user it is not available in this channel.`,
  notStarted: (name: string) => `${name} did not run: the turn was cancelled before it started.`,
  empty: '(the tool returned no output)',
  truncated: (n: number) => `[truncated ${n} chars]`,
} as const;

/** An outcome for a call that never ran (rejected by the executor, a guard, or a human). */
export function errorOutcome(call: ToolCall, errorKind: ToolErrorKind, content: string, args?: unknown): ToolOutcome {
  return { callId: call.id, name: call.name, ok: false, content, errorKind, durationMs: 0, ...(args === undefined ? {} : { args }) };
}

/** Cuts text to `max` characters plus a marker saying how much was dropped. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = Math.max(0, max);
  // Never split a surrogate pair: the model would see a broken character.
  const code = text.charCodeAt(cut - 1);
  if (cut > 0 && code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return `${text.slice(0, cut)}\n${TOOL_MESSAGES.truncated(text.length - cut)}`;
}

/** Splits what a tool returned into the model's text and the trace's raw value. */
export function readResult(result: ToolResult | unknown): { text: string; raw?: unknown; outsideSource?: string; failed?: boolean; images?: ImageRef[] } {
  if (typeof result === 'string') return { text: result };
  if (typeof result === 'object' && result !== null && 'summary' in result) {
    const { summary, raw, outsideSource, failed, images } = result as { summary: unknown; raw?: unknown; outsideSource?: unknown; failed?: unknown; images?: ImageRef[] };
    const text = typeof summary === 'string' ? summary : safeJson(summary);
    return {
      text,
      raw,
      ...(typeof outsideSource === 'string' && { outsideSource }),
      ...(failed === true && { failed: true }),
      ...(Array.isArray(images) && images.length > 0 && { images }),
    };
  }
  // Outside the contract (a tool returned a number or an object): show it rather than lose it.
  return { text: result === undefined ? '' : safeJson(result), raw: result };
}

/** The message of whatever was thrown, without a stack. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message.trim() || err.name;
  if (typeof err === 'string') return err;
  return safeJson(err);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
