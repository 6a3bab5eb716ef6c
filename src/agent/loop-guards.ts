/**
 * Guards against a model stuck in a loop within one turn. Each rule is a small predicate over
 * what the turn has done so far; the first rule that objects stops that call path. The loop ends
 * a call path when:
 * - the same tool is called with the same arguments a third time (`repeatsSameCall(3)`): the
 *   result cannot change, so the model should use what it has;
 * - the same tool has failed three times in a row (`keepsFailing(3)`): more retries of the same
 *   approach rarely help, and each costs a model call.
 * The step limit (HERMES_MAX_STEPS) is the loop's own bound and lives there.
 */
import { canonicalJson, canonicalJsonText } from '../basics/canonical-json.js';

export type LoopGuardReason = 'repeated_call' | 'repeated_failure';

export type LoopGuardVerdict =
  | { allow: true }
  | { allow: false; reason: LoopGuardReason; modelMessage: string; userMessage: string };

/** What the model reads in the tool message for a stopped call. */
export const LOOP_GUARD_MODEL_TEXT: Record<LoopGuardReason, (tool: string, limit: number) => string> = {
  repeated_call: (tool, limit) =>
    `Not run: you already called ${tool} with exactly these arguments ${limit - 1} times in this turn, ` +
    `and it would return the same result. Do not call it again with the same arguments: use the results you ` +
    `have, change the arguments, or answer the user.`,
  repeated_failure: (tool, limit) =>
    `Not run: ${tool} has failed ${limit} times in a row in this turn. Stop calling ${tool} for now; ` +
    `tell the user what went wrong, or try a different approach.`,
};

/** What a person may be shown (status line, trace summary) for the same stop. */
export const LOOP_GUARD_USER_TEXT: Record<LoopGuardReason, (tool: string) => string> = {
  repeated_call: (tool) => `Stopped a repeated call to ${tool} (same arguments again).`,
  repeated_failure: (tool) => `Stopped calling ${tool} after it failed several times in a row.`,
};

interface TurnHistory {
  /** Calls allowed so far, keyed by tool name + canonical arguments. */
  readonly callCounts: ReadonlyMap<string, number>;
  /** Failures in a row per tool; a success of that tool resets its count. */
  readonly failureStreaks: ReadonlyMap<string, number>;
}

export interface GuardedCall {
  name: string;
  key: string;
}

/** A rule returns the reason it objects to this call, or undefined. */
export type LoopGuardRule = (call: GuardedCall, history: TurnHistory) => { reason: LoopGuardReason; limit: number } | undefined;

/** Objects to the `limit`-th identical call (same tool, same canonical arguments). */
export const repeatsSameCall =
  (limit: number): LoopGuardRule =>
  (call, history) =>
    (history.callCounts.get(call.key) ?? 0) + 1 >= limit ? { reason: 'repeated_call', limit } : undefined;

/** Objects once the tool has failed `limit` times in a row. */
export const keepsFailing =
  (limit: number): LoopGuardRule =>
  (call, history) =>
    (history.failureStreaks.get(call.name) ?? 0) >= limit ? { reason: 'repeated_failure', limit } : undefined;

export const DEFAULT_LOOP_GUARD_RULES: readonly LoopGuardRule[] = [repeatsSameCall(3), keepsFailing(3)];

export interface LoopGuard {
  /** Decides on a call before it runs; an allowed call counts towards the repeat limit. */
  check(call: { name: string; args: unknown }): LoopGuardVerdict;
  record(outcome: { name: string; ok: boolean }): void;
}

/** One guard per turn. */
export function createLoopGuard(rules: readonly LoopGuardRule[] = DEFAULT_LOOP_GUARD_RULES): LoopGuard {
  const callCounts = new Map<string, number>();
  const failureStreaks = new Map<string, number>();
  return {
    check({ name, args }) {
      const call = { name, key: `${name}\u0000${canonicalArgs(args)}` };
      for (const rule of rules) {
        const stop = rule(call, { callCounts, failureStreaks });
        if (stop) {
          return {
            allow: false,
            reason: stop.reason,
            modelMessage: LOOP_GUARD_MODEL_TEXT[stop.reason](name, stop.limit),
            userMessage: LOOP_GUARD_USER_TEXT[stop.reason](name),
          };
        }
      }
      callCounts.set(call.key, (callCounts.get(call.key) ?? 0) + 1);
      return { allow: true };
    },
    record({ name, ok }) {
      failureStreaks.set(name, ok ? 0 : (failureStreaks.get(name) ?? 0) + 1);
    },
  };
}

/**
 * Arguments as a stable string: JSON text is parsed first (so spacing and key order do not make
 * two identical calls look different), object keys are sorted, absent values dropped.
 */
export function canonicalArgs(args: unknown): string {
  return typeof args === 'string' ? canonicalJsonText(args) : canonicalJson(args);
}
