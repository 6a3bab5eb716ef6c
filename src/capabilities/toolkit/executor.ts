import { systemClock, type Clock } from '../../basics/clock.js';
import { NetRefusedError } from '../net/net-client.js';
import type { ToolCall } from '../../basics/types.js';
import { closestMatches } from '../../basics/text/closest-match.js';
import { coerceArgs } from './coerce-args.js';
import { formatInvalidArgs } from './format-issues.js';
import { inputJsonSchema } from './json-schema.js';
import { parseArgs } from './parse-args.js';
import type { ToolRegistry, ToolView } from './registry.js';
import type { AnyTool, ToolContext } from './tool-api.js';
import { capText, errorMessage, errorOutcome, readResult, TOOL_MESSAGES, type ToolOutcome } from './tool-outcome.js';
import { wrapOutsideText } from '../../basics/safety/outside-text.js';

export type { ToolOutcome, ToolErrorKind } from './tool-outcome.js';
export { errorOutcome, TOOL_MESSAGES } from './tool-outcome.js';

/**
 * The longest arguments text one call may carry. A bigger one is refused with a clear error (and
 * its text is kept out of the session history): a megabyte expression is never what the user
 * wanted, and it would crowd everything else out of the context window.
 */
export const MAX_TOOL_ARGS_CHARS = 100_000;
/** Deepest nesting of arrays and objects accepted in arguments; deeper is refused before anything walks them recursively. */
export const MAX_ARGS_DEPTH = 64;

/** Nesting depth of a JSON value (a scalar is 0), counted without recursion and giving up past `limit`. */
export function nestingDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth]);
  }
  return max;
}

/** A call checked against the registry and the tool's schema: ready to run (or to ask approval for), or answered already. */
export type PreparedCall =
  | { kind: 'ready'; call: ToolCall; tool: AnyTool; args: unknown; needsApproval: boolean }
  | { kind: 'rejected'; call: ToolCall; outcome: ToolOutcome };

export type Ready = Extract<PreparedCall, { kind: 'ready' }>;

export interface ToolExecutorOptions {
  registry: ToolRegistry;
  /** HERMES_TOOL_TIMEOUT_MS: used when neither the config nor the tool sets one. */
  defaultTimeoutMs: number;
  defaultMaxResultChars?: number;
  clock?: Clock;
}

/**
 * Turns a model's tool calls into outcomes. Every way a call can go wrong ends as a ToolOutcome
 * with text the model can act on; nothing here throws into the agent loop.
 */
export class ToolExecutor {
  private readonly registry: ToolRegistry;
  private readonly defaultTimeoutMs: number;
  private readonly defaultMaxResultChars: number;
  private readonly clock: Clock;

  constructor(options: ToolExecutorOptions) {
    this.registry = options.registry;
    this.defaultTimeoutMs = options.defaultTimeoutMs;
    this.defaultMaxResultChars = options.defaultMaxResultChars ?? 2000;
    this.clock = options.clock ?? systemClock;
  }

  prepareCall(call: ToolCall, view: ToolView): PreparedCall {
    try {
      return this.prepare(call, view);
    } catch (err) {
      return { kind: 'rejected', call, outcome: errorOutcome(call, 'failed', TOOL_MESSAGES.failed(call.name, errorMessage(err))) };
    }
  }

  private prepare(call: ToolCall, view: ToolView): PreparedCall {
    const tool = this.resolve(call.name, view);
    const asked = String(call.name ?? '').trim().replace(/^functions\./, '');
    if (!tool && this.registry.deniedHere(asked, view)) {
      return { kind: 'rejected', call: { ...call, name: asked }, outcome: errorOutcome({ ...call, name: asked }, 'refused', TOOL_MESSAGES.deniedByPolicy(asked)) };
    }
    if (!tool) {
      const available = this.registry.visible(view).map((t) => t.name);
      const [closest] = closestMatches(call.name, available);
      return { kind: 'rejected', call, outcome: errorOutcome(call, 'unknown_tool', TOOL_MESSAGES.unknownTool(call.name, available, closest)) };
    }
    const named: ToolCall = { ...call, name: tool.name };
    const size = typeof call.arguments === 'string' ? call.arguments.length : 0;
    if (size > MAX_TOOL_ARGS_CHARS) {
      return { kind: 'rejected', call: named, outcome: errorOutcome(named, 'invalid_args', TOOL_MESSAGES.argsTooLong(tool.name, size, MAX_TOOL_ARGS_CHARS)) };
    }
    const parsed = parseArgs(call.arguments);
    if (parsed.ok && nestingDepth(parsed.value, MAX_ARGS_DEPTH) > MAX_ARGS_DEPTH) {
      return { kind: 'rejected', call: named, outcome: errorOutcome(named, 'invalid_args', TOOL_MESSAGES.argsTooDeep(tool.name, MAX_ARGS_DEPTH)) };
    }
    if (!parsed.ok) {
      const received = capText(String(call.arguments), 200);
      return { kind: 'rejected', call: named, outcome: errorOutcome(named, 'bad_json', TOOL_MESSAGES.badJson(tool.name, parsed.problem, received)) };
    }
    const coerced = coerceArgs(parsed.value, inputJsonSchema(tool));
    const result = tool.input.safeParse(coerced);
    if (!result.success) {
      return { kind: 'rejected', call: named, outcome: errorOutcome(named, 'invalid_args', formatInvalidArgs(tool.name, result.error.issues), coerced) };
    }
    return { kind: 'ready', call: named, tool, args: result.data, needsApproval: this.needsApproval(tool, result.data) };
  }

  /** Exact name first; then the forms models produce for an unambiguous name ("functions.x", other case). */
  private resolve(rawName: string, view: ToolView): AnyTool | undefined {
    const name = String(rawName ?? '').trim().replace(/^functions\./, '');
    if (this.registry.isVisible(name, view)) return this.registry.get(name);
    const matches = this.registry.visible(view).filter((t) => t.name.toLowerCase() === name.toLowerCase());
    return matches.length === 1 ? matches[0] : undefined;
  }

  /** The operator's setting wins; then the tool's own rule. A rule that throws asks (the safe side). */
  private needsApproval(tool: AnyTool, args: unknown): boolean {
    const override = this.registry.settingsFor(tool.name).needsApproval;
    if (override !== undefined) return override;
    if (typeof tool.needsApproval === 'function') {
      try {
        return Boolean(tool.needsApproval(args));
      } catch {
        return true;
      }
    }
    return tool.needsApproval === true;
  }

  /**
   * The tool's own `check` (network rules and the like), run before anyone is asked to approve.
   * Undefined when the call may be shown; otherwise the outcome that answers it. Never rejects.
   */
  async checkBeforeApproval(p: Ready, ctx: ToolContext): Promise<ToolOutcome | undefined> {
    if (!p.tool.check) return undefined;
    const settings = this.registry.settingsFor(p.tool.name);
    const timeoutMs = settings.timeoutMs ?? this.defaultTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([ctx.signal, timeout]);
    const base = { callId: p.call.id, name: p.tool.name, args: p.args, durationMs: 0 };
    try {
      await Promise.race([
        p.tool.check(p.args, withCallContext(ctx, signal, settings.settings)),
        new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(new Error(`the check timed out after ${timeoutMs} ms`)), { once: true })),
      ]);
      return undefined;
    } catch (err) {
      if (err instanceof NetRefusedError) return { ...base, ok: false, errorKind: 'refused', content: errorMessage(err) };
      return { ...base, ok: false, errorKind: 'not_run', content: TOOL_MESSAGES.refusedBeforeApproval(p.tool.name, errorMessage(err)) };
    }
  }

  /** Runs one prepared call with its time limit and result cap. Never rejects. */
  async runPrepared(p: Ready, ctx: ToolContext): Promise<ToolOutcome> {
    const started = this.clock.now();
    const base = { callId: p.call.id, name: p.tool.name, args: p.args, startedAt: started };
    const settings = this.registry.settingsFor(p.tool.name);
    const maxChars = settings.maxResultChars ?? this.defaultMaxResultChars;
    const timeoutMs = settings.timeoutMs ?? this.defaultTimeoutMs;
    const sideEffects = p.tool.sideEffects === true;
    const fail = (errorKind: ToolOutcome['errorKind'], content: string): ToolOutcome => ({
      ...base, ok: false, errorKind, content: capText(content, maxChars), durationMs: this.clock.now() - started,
    });

    if (ctx.signal.aborted) return { ...fail('not_run', TOOL_MESSAGES.notStarted(p.tool.name)), durationMs: 0 };

    // The call's signal fires on its time limit or on the turn's own signal. One controller with a
    // listener on the turn's signal, not AbortSignal.any: that builds weak references and a
    // registry per call, a visible share of a fast tool's whole step (docs/performance.md).
    const call = new AbortController();
    const signal = call.signal;
    let timeoutFired = false;
    let cancelTimer: () => void = () => {};
    let onCancel: () => void = () => {};
    const timedOut = new Promise<{ kind: 'timeout' }>((resolve) => {
      cancelTimer = this.clock.setTimer(() => {
        timeoutFired = true;
        call.abort(new Error(`timed out after ${timeoutMs} ms`));
        resolve({ kind: 'timeout' });
      }, timeoutMs);
    });
    const cancelled = new Promise<{ kind: 'cancelled' }>((resolve) => {
      onCancel = () => {
        call.abort(ctx.signal.reason);
        resolve({ kind: 'cancelled' });
      };
      ctx.signal.addEventListener('abort', onCancel, { once: true });
    });
    // A tool that throws synchronously, rejects, or settles after we gave up is all caught here.
    const running = Promise.resolve()
      .then(() => p.tool.run(p.args, withCallContext(ctx, signal, settings.settings)))
      .then(
        (value: unknown) => ({ kind: 'done' as const, value }),
        (error: unknown) => ({ kind: 'threw' as const, error }),
      );

    try {
      const first = await Promise.race([running, timedOut, cancelled]);
      if (timeoutFired) return fail('timeout', TOOL_MESSAGES.timeout(p.tool.name, timeoutMs, sideEffects));
      if (first.kind === 'cancelled' || (first.kind === 'threw' && ctx.signal.aborted)) {
        return fail('failed', TOOL_MESSAGES.cancelled(p.tool.name, sideEffects));
      }
      if (first.kind === 'threw') {
        if (first.error instanceof NetRefusedError) return fail('refused', errorMessage(first.error));
        return fail('failed', TOOL_MESSAGES.failed(p.tool.name, errorMessage(first.error)));
      }
      if (first.kind !== 'done') return fail('failed', TOOL_MESSAGES.cancelled(p.tool.name, sideEffects));
      const { text, raw, outsideSource, failed, images } = readResult(first.value);
      const body = text === '' ? TOOL_MESSAGES.empty : text;
      // Outside text is capped first and wrapped after, so the cap can never cut the closing marker.
      const shown = outsideSource === undefined ? capText(body, maxChars) : wrapOutsideText(capText(body, maxChars), { source: outsideSource });
      // A tool error the tool itself reported (MCP isError): the model reads it as a failure, still wrapped.
      const content = failed ? TOOL_MESSAGES.failed(p.tool.name, shown) : shown;
      return {
        ...base,
        ok: !failed,
        ...(failed && { errorKind: 'failed' as const }),
        content,
        ...(raw === undefined ? {} : { raw }),
        ...(outsideSource === undefined ? {} : { outsideSource }),
        ...(images && { images }),
        durationMs: this.clock.now() - started,
      };
    } catch (err) {
      return fail('failed', TOOL_MESSAGES.failed(p.tool.name, errorMessage(err)));
    } finally {
      cancelTimer();
      ctx.signal.removeEventListener('abort', onCancel);
    }
  }

  /**
   * Runs the calls of one model response. Tools without side effects run concurrently; tools
   * with side effects run one at a time, in the order the model wrote them. Outcomes come back in
   * call order; rejected calls pass through with their outcome.
   */
  async runMany(prepared: readonly PreparedCall[], ctxFor: (p: Ready) => ToolContext): Promise<ToolOutcome[]> {
    let sideEffectChain: Promise<unknown> = Promise.resolve();
    const pending = prepared.map((p) => {
      if (p.kind === 'rejected') return Promise.resolve(p.outcome);
      const run = () => this.runWithContext(p, ctxFor);
      if (p.tool.sideEffects !== true) return run();
      const next = sideEffectChain.then(run);
      sideEffectChain = next;
      return next;
    });
    return Promise.all(pending);
  }

  private async runWithContext(p: Ready, ctxFor: (p: Ready) => ToolContext): Promise<ToolOutcome> {
    let ctx: ToolContext;
    try {
      ctx = ctxFor(p);
    } catch (err) {
      return errorOutcome(p.call, 'not_run', TOOL_MESSAGES.failed(p.tool.name, errorMessage(err)), p.args);
    }
    return this.runPrepared(p, ctx);
  }
}

/**
 * The context with this call's signal and settings. Layered over `ctx` instead of copied, so the
 * parts the context builds on first use (workspace, facts, logger) stay unbuilt for calls that
 * never touch them.
 */
function withCallContext(ctx: ToolContext, signal: AbortSignal, settings: ToolContext['settings']): ToolContext {
  return Object.create(ctx, { signal: { value: signal, enumerable: true }, settings: { value: settings, enumerable: true } }) as ToolContext;
}
