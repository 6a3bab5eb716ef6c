import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { percentile } from '../../basics/percentile.js';
import { parseTraceLine } from '../../runtime/trace/trace-schema.js';

/** Usage and quality numbers computed from trace files (the traces are the only source of truth). */
export interface TraceStats {
  turns: number;
  outcomes: Record<string, number>;
  steps: { total: number; mean: number; max: number };
  tokens: { prompt: number; completion: number; promptPerTurn: number };
  modelCalls: { count: number; errors: number; p50Ms: number; p95Ms: number };
  tools: Record<string, { calls: number; ok: number; successRate: number; p50Ms: number; p95Ms: number }>;
  errors: Record<string, number>;
  /** Requests turned away (HERMES_ALLOW, HERMES_USER_RATE, HERMES_USER_DAILY_TOKENS), by reason. */
  refusals: Record<string, number>;
  /** Sub-agent runs per agent (their tokens are also in `tokens`, as part of their parent turns). */
  agents: Record<string, { runs: number; answered: number; promptTokens: number; completionTokens: number; p50Ms: number; p95Ms: number }>;
  /** Answers sent back once because they stated figures no tool gave (HERMES_GROUNDING). */
  groundingChecks: number;
}

export interface StatsWindow {
  since: number;
  until: number;
  /** Only turns started by this speaker (speakerKey); undefined = everyone. */
  userKey?: string;
}

const MAX_FILES = 400;

/**
 * The traces exist but cannot be read (EACCES, EIO, not a folder…). Only a missing folder means
 * "no traces yet"; anything else must not be reported as zero turns.
 */
export class TracesUnreadableError extends Error {
  constructor(
    readonly dir: string,
    readonly code: string,
    cause: unknown,
  ) {
    super(`traces in ${dir} could not be read (${code}): ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException)?.code === 'ENOENT';
const unreadable = (dir: string, err: unknown) => new TracesUnreadableError(dir, (err as NodeJS.ErrnoException)?.code ?? 'error', err);

/** Reads the day files that overlap the window, line by line (bounded memory per line). */
export async function readTraceStats(dir: string, window: StatsWindow): Promise<TraceStats> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => /^\d{4}-\d{2}-\d{2}\.jsonl$/.test(f)).sort();
  } catch (err) {
    if (!isMissing(err)) throw unreadable(dir, err);
    files = [];
  }
  const firstDay = new Date(window.since).toISOString().slice(0, 10);
  const lastDay = new Date(window.until).toISOString().slice(0, 10);
  files = files.filter((f) => f.slice(0, 10) >= firstDay && f.slice(0, 10) <= lastDay).slice(-MAX_FILES);

  const events: Array<Record<string, unknown>> = [];
  const turnsOfUser = new Set<string>();
  for (const f of files) {
    let handle;
    try {
      handle = await open(path.join(dir, f));
    } catch (err) {
      if (isMissing(err)) continue; // pruned between listing and opening
      throw unreadable(dir, err);
    }
    try {
      for await (const line of handle.readLines({ encoding: 'utf8' })) {
        if (!line) continue;
        // A torn last line after a crash, or a record of no known type: skipped.
        const e = parseTraceLine(line);
        if (!e) continue;
        const ts = Date.parse(e.ts);
        if (!(ts >= window.since && ts <= window.until)) continue;
        if (e.type === 'turn_start' && (!window.userKey || e.userKey === window.userKey)) turnsOfUser.add(String(e.turnId));
        // Keep only what the numbers need: traces hold whole prompts.
        events.push({ type: e.type, turnId: e.turnId, userKey: e.userKey, reason: e.reason, outcome: e.outcome, steps: e.steps, promptTokens: e.promptTokens, completionTokens: e.completionTokens, latencyMs: e.latencyMs, error: e.error, grounding: e.grounding, name: e.name, ok: e.ok, durationMs: e.durationMs, errorKind: e.errorKind, agent: e.agent });
      }
    } catch (err) {
      throw unreadable(dir, err);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
  // Refusals carry their user: most have no turn.
  return summarise(events.filter((e) => !window.userKey || (e.type === 'refusal' ? e.userKey === window.userKey : turnsOfUser.has(String(e.turnId)))));
}

/** Pure: events in, numbers out. */
export function summarise(events: Array<Record<string, unknown>>): TraceStats {
  const outcomes: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  const toolDur = new Map<string, number[]>();
  const toolOk = new Map<string, number>();
  const modelLat: number[] = [];
  const agentRuns = new Map<string, { durs: number[]; answered: number; prompt: number; completion: number }>();
  let turns = 0, steps = 0, maxSteps = 0, prompt = 0, completion = 0, modelErrors = 0, groundingChecks = 0;
  for (const e of events) {
    if (e.type === 'turn_end') {
      turns++;
      const o = String(e.outcome);
      outcomes[o] = (outcomes[o] ?? 0) + 1;
      const s = Number(e.steps) || 0;
      steps += s;
      maxSteps = Math.max(maxSteps, s);
      prompt += Number(e.promptTokens) || 0;
      completion += Number(e.completionTokens) || 0;
      if (o.startsWith('model_error') || o === 'error') errors[o] = (errors[o] ?? 0) + 1;
    } else if (e.type === 'refusal') {
      const r = String(e.reason);
      refusals[r] = (refusals[r] ?? 0) + 1;
    } else if (e.type === 'model_call') {
      modelLat.push(Number(e.latencyMs) || 0);
      if (e.error) modelErrors++;
      if (e.grounding) groundingChecks++;
    } else if (e.type === 'subagent') {
      const name = String(e.agent);
      const a = agentRuns.get(name) ?? agentRuns.set(name, { durs: [], answered: 0, prompt: 0, completion: 0 }).get(name)!;
      a.durs.push(Number(e.durationMs) || 0);
      if (e.outcome === 'answered') a.answered++;
      a.prompt += Number(e.promptTokens) || 0;
      a.completion += Number(e.completionTokens) || 0;
    } else if (e.type === 'tool_call') {
      const name = String(e.name);
      (toolDur.get(name) ?? toolDur.set(name, []).get(name)!).push(Number(e.durationMs) || 0);
      if (e.ok) toolOk.set(name, (toolOk.get(name) ?? 0) + 1);
      else {
        const k = `tool:${String(e.errorKind ?? 'failed')}`;
        errors[k] = (errors[k] ?? 0) + 1;
      }
    }
  }
  modelLat.sort((a, b) => a - b);
  const tools: TraceStats['tools'] = {};
  for (const [name, durs] of toolDur) {
    durs.sort((a, b) => a - b);
    const ok = toolOk.get(name) ?? 0;
    tools[name] = { calls: durs.length, ok, successRate: durs.length ? ok / durs.length : 0, p50Ms: percentile(durs, 50), p95Ms: percentile(durs, 95) };
  }
  const agents: TraceStats['agents'] = {};
  for (const [name, a] of agentRuns) {
    a.durs.sort((x, y) => x - y);
    agents[name] = { runs: a.durs.length, answered: a.answered, promptTokens: a.prompt, completionTokens: a.completion, p50Ms: percentile(a.durs, 50), p95Ms: percentile(a.durs, 95) };
  }
  return {
    turns,
    outcomes,
    steps: { total: steps, mean: turns ? steps / turns : 0, max: maxSteps },
    tokens: { prompt, completion, promptPerTurn: turns ? Math.round(prompt / turns) : 0 },
    modelCalls: { count: modelLat.length, errors: modelErrors, p50Ms: percentile(modelLat, 50), p95Ms: percentile(modelLat, 95) },
    tools,
    errors,
    refusals,
    agents,
    groundingChecks,
  };
}

export function formatStats(s: TraceStats, opts: { compact?: boolean } = {}): string[] {
  const refused = Object.entries(s.refusals);
  const refusedLine = `Refused: ${refused.map(([k, v]) => `${k} ${v}`).join(', ')}`;
  if (s.turns === 0 && s.modelCalls.count === 0) return refused.length ? ['No turns in this window.', refusedLine] : ['No turns in this window.'];
  const lines = [
    `Turns: ${s.turns} (${Object.entries(s.outcomes).map(([k, v]) => `${k} ${v}`).join(', ') || 'none finished'})`,
    `Steps per turn: mean ${s.steps.mean.toFixed(1)}, max ${s.steps.max}`,
    `Tokens: ${s.tokens.prompt} in, ${s.tokens.completion} out (${s.tokens.promptPerTurn} in per turn)`,
    `Model calls: ${s.modelCalls.count}, errors ${s.modelCalls.errors}, latency p50 ${s.modelCalls.p50Ms} ms, p95 ${s.modelCalls.p95Ms} ms`,
  ];
  if (s.groundingChecks) lines.push(`Grounding checks: ${s.groundingChecks} answer${s.groundingChecks === 1 ? '' : 's'} asked again for figures no tool gave`);
  const tools = Object.entries(s.tools).sort((a, b) => b[1].calls - a[1].calls);
  if (tools.length) {
    lines.push('Tools:');
    for (const [name, t] of tools.slice(0, opts.compact ? 8 : 100)) {
      lines.push(`  ${name}: ${t.calls} calls, ${(t.successRate * 100).toFixed(0)}% ok, p50 ${t.p50Ms} ms, p95 ${t.p95Ms} ms`);
    }
  }
  const agents = Object.entries(s.agents ?? {}).sort((a, b) => b[1].runs - a[1].runs);
  if (agents.length) {
    lines.push('Sub-agents:');
    for (const [name, a] of agents) {
      const ok = a.runs ? Math.round((a.answered / a.runs) * 100) : 0;
      lines.push(`  ${name}: ${a.runs} run${a.runs === 1 ? '' : 's'}, ${ok}% ok, ${a.promptTokens} in, ${a.completionTokens} out, p50 ${a.p50Ms} ms, p95 ${a.p95Ms} ms`);
    }
  }
  const errs = Object.entries(s.errors);
  if (errs.length) lines.push(`Errors: ${errs.map(([k, v]) => `${k} ${v}`).join(', ')}`);
  if (refused.length) lines.push(refusedLine);
  return lines;
}
