import { canonicalJsonText } from '../../basics/canonical-json.js';
import type { ModelProvider, ToolSpec } from '../../runtime/provider/provider.js';
import type { ChatMessage } from '../../basics/types.js';
import type { TracedEvent } from './trace-reader.js';

/**
 * Replay: re-send the model requests a trace recorded (exact messages, same tool list) to another
 * model or system prompt, and line up the recorded tool-call path with the new one step by step.
 * Tools are not re-run: each step gets the history the original run had, so every step is a fair
 * question ("given this, what would you call?").
 */

export type ModelCallEvent = Extract<TracedEvent, { type: 'model_call' }>;

export interface ReplaySelection {
  turnId?: string;
  sessionId?: string;
}

/** One step's decision: the tool calls made, or the answer text when there were none. */
export interface Decision {
  calls: Array<{ name: string; args: string }>;
  text: string | null;
  error?: string;
}

export interface ReplayStep {
  turnId: string;
  step: number;
  recorded: Decision;
  replayed: Decision;
  /** same tool names in the same order (both none counts as same) */
  samePath: boolean;
  /** same path, but some arguments differ */
  argsDiffer: boolean;
  /** recorded tools that this deployment does not have (not offered in the replay) */
  missingTools: string[];
}

/** The recorded model calls of one turn or one session, oldest first; throws a clear message. */
export function selectModelCalls(events: TracedEvent[], sel: ReplaySelection): ModelCallEvent[] {
  let turnIds: Set<string>;
  if (sel.turnId) {
    const ids = [...new Set(events.flatMap((e) => (e.turnId ? [e.turnId] : [])))];
    const exact = ids.filter((id) => id === sel.turnId);
    const prefixed = exact.length ? exact : ids.filter((id) => id.startsWith(sel.turnId!));
    if (prefixed.length === 0) throw new Error(`no turn ${sel.turnId} in the traces`);
    if (prefixed.length > 1) throw new Error(`turn id ${sel.turnId} is ambiguous: ${prefixed.slice(0, 5).join(', ')}`);
    turnIds = new Set(prefixed);
  } else if (sel.sessionId) {
    turnIds = new Set(events.flatMap((e) => (e.type === 'turn_start' && e.sessionId === sel.sessionId ? [e.turnId] : [])));
    if (turnIds.size === 0) throw new Error(`no turn of session ${sel.sessionId} in the traces`);
  } else {
    throw new Error('say which turn or session to replay: --turn <id> or --session <id>');
  }
  // A sub-agent's calls ran under its own system prompt and tools: replay is about the main agent's decisions.
  // A call whose earlier messages were in a lost line (trace-prompts.ts) cannot be resent as it was.
  const calls = events.filter((e): e is ModelCallEvent => e.type === 'model_call' && turnIds.has(e.turnId) && !e.agent && Array.isArray(e.messages) && !e.promptIncomplete);
  if (calls.length === 0) throw new Error('the selected turns have no recorded model calls');
  return calls;
}

function recordedDecision(e: ModelCallEvent): Decision {
  if (e.error || !e.response) return { calls: [], text: null, error: e.error ?? 'no response recorded' };
  return { calls: (e.response.toolCalls ?? []).map((c) => ({ name: c.name, args: c.arguments })), text: e.response.content ?? null };
}

/** Arguments compared as parsed JSON, so spacing and key order do not count as a difference. */
function sameArgs(a: string, b: string): boolean {
  return canonicalJsonText(a) === canonicalJsonText(b);
}

export function withSystemPrompt(messages: ChatMessage[], system: string | undefined): ChatMessage[] {
  if (system === undefined) return messages;
  return messages[0]?.role === 'system' ? [{ role: 'system', content: system }, ...messages.slice(1)] : [{ role: 'system', content: system }, ...messages];
}

export async function replaySteps(
  calls: ModelCallEvent[],
  deps: { provider: ModelProvider; specs: ToolSpec[]; system?: string; maxSteps: number; signal?: AbortSignal },
): Promise<ReplayStep[]> {
  const out: ReplayStep[] = [];
  for (const e of calls.slice(0, deps.maxSteps)) {
    // Stopped (the dashboard's time limit): the steps so far are the answer.
    if (deps.signal?.aborted) break;
    const recorded = recordedDecision(e);
    const offered = e.tools.flatMap((name) => deps.specs.filter((s) => s.name === name));
    const missingTools = e.tools.filter((name) => !deps.specs.some((s) => s.name === name));
    let replayed: Decision;
    try {
      const r = await deps.provider.complete({ messages: withSystemPrompt(e.messages, deps.system), tools: offered, signal: deps.signal });
      replayed = { calls: r.toolCalls.map((c) => ({ name: c.name, args: c.arguments })), text: r.content };
    } catch (err) {
      replayed = { calls: [], text: null, error: (err as Error).message };
    }
    const samePath = !recorded.error && !replayed.error && recorded.calls.map((c) => c.name).join(',') === replayed.calls.map((c) => c.name).join(',');
    const argsDiffer = samePath && recorded.calls.some((c, i) => !sameArgs(c.args, replayed.calls[i]?.args ?? ''));
    out.push({ turnId: e.turnId, step: e.step, recorded, replayed, samePath, argsDiffer, missingTools });
  }
  return out;
}

const clip = (s: string, n: number) => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > n ? `${flat.slice(0, n - 1)}…` : flat;
};

function describe(d: Decision, width: number): string[] {
  if (d.error) return [clip(`error: ${d.error}`, width)];
  if (d.calls.length === 0) return [clip(`answer: ${d.text ?? ''}`, width)];
  return d.calls.map((c) => clip(`${c.name} ${c.args}`, width));
}

/** Side by side: recorded on the left, the replay on the right, a verdict per step. */
export function formatReplay(steps: ReplayStep[], labels: { recorded: string; replayed: string }, width = 56): string[] {
  const pad = (s: string) => s + ' '.repeat(Math.max(0, width - s.length));
  const lines = [`${pad(`recorded (${labels.recorded})`)} | replay (${labels.replayed})`, `${'-'.repeat(width)}-+-${'-'.repeat(width)}`];
  let turn = '';
  for (const s of steps) {
    if (s.turnId !== turn) {
      turn = s.turnId;
      lines.push(`turn ${turn}`);
    }
    const verdict = !s.samePath ? 'DIFFERENT PATH' : s.argsDiffer ? 'same tools, other arguments' : 'same';
    lines.push(`step ${s.step}: ${verdict}${s.missingTools.length ? ` (not offered, unknown here: ${s.missingTools.join(', ')})` : ''}`);
    const left = describe(s.recorded, width);
    const right = describe(s.replayed, width);
    for (let i = 0; i < Math.max(left.length, right.length); i++) lines.push(`${pad(left[i] ?? '')} | ${right[i] ?? ''}`);
  }
  const differ = steps.filter((s) => !s.samePath);
  lines.push(
    `${steps.length} step(s) replayed; tool-call path differs in ${differ.length}${differ.length ? ` (${differ.map((s) => `${s.turnId.slice(0, 8)} step ${s.step}`).join(', ')})` : ''}; arguments differ in ${steps.filter((s) => s.argsDiffer).length}.`,
  );
  return lines;
}
