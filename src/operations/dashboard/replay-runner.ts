import { randomBytes } from 'node:crypto';
import type { ModelProvider, ToolSpec } from '../../runtime/provider/provider.js';
import { replaySteps, selectModelCalls, type ReplayStep } from '../eval/replay.js';
import { parseTraceValue, type TraceRecord } from '../../runtime/trace/trace-schema.js';

/**
 * Replay from the dashboard: the same code as `npm run replay` (src/operations/eval/replay.ts), one run at a
 * time (each replays every model call of a turn against a paid model), stopped after `timeoutMs`.
 * Finished runs are kept in memory, newest `keep` of them, so the result page can be reloaded.
 */

export interface ReplayDeps {
  /** The model the form suggests (HERMES_MODEL). */
  defaultModel: string;
  /** A provider for another model name on the configured server. */
  provider(model: string): ModelProvider;
  /** Every tool the recordings may have offered. */
  specs(): ToolSpec[];
  timeoutMs?: number;
  maxSteps?: number;
}

export interface ReplayRun {
  id: string;
  turnId: string;
  model: string;
  recordedModel: string;
  startedAt: number;
  finishedAt: number;
  steps: ReplayStep[];
  /** Why the run stopped short or could not start; steps hold whatever was done. */
  error?: string;
}

/** What a person reads when a replay cannot run (each message in one place). */
export const REPLAY_TEXT = {
  busy: 'Another replay is running. Wait for it to finish, then try again.',
  badModel: 'Give a model name: letters, digits and . _ : / @ - only, at most 100 characters.',
  timedOut: (s: number) => `The replay was stopped after ${s} s; the steps below are those that finished in time.`,
} as const;

export const MODEL_NAME = /^[\w.:/@-]{1,100}$/;

export interface ReplayRunner {
  busy(): boolean;
  run(turnId: string, events: Array<Record<string, unknown>>, model: string): Promise<ReplayRun | { refused: string }>;
  get(id: string): ReplayRun | undefined;
}

export function createReplayRunner(deps: ReplayDeps, now: () => number = Date.now, keep = 20): ReplayRunner {
  const timeoutMs = deps.timeoutMs ?? 120_000;
  const runs = new Map<string, ReplayRun>();
  let running = false;
  return {
    busy: () => running,
    get: (id) => runs.get(id),
    async run(turnId, events, model) {
      if (!MODEL_NAME.test(model)) return { refused: REPLAY_TEXT.badModel };
      if (running) return { refused: REPLAY_TEXT.busy };
      running = true;
      const startedAt = now();
      const run: ReplayRun = { id: randomBytes(9).toString('base64url'), turnId, model, recordedModel: '', startedAt, finishedAt: startedAt, steps: [] };
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        // Lines as the index read them: only records that match their schema are replayed.
        const calls = selectModelCalls(events.map(parseTraceValue).filter((e): e is TraceRecord => e !== undefined), { turnId });
        run.recordedModel = calls[0]?.model ?? '';
        run.steps = await replaySteps(calls, { provider: deps.provider(model), specs: deps.specs(), maxSteps: deps.maxSteps ?? 50, signal });
        if (signal.aborted) run.error = REPLAY_TEXT.timedOut(Math.round(timeoutMs / 1000));
      } catch (err) {
        run.error = (err as Error).message;
      } finally {
        running = false;
      }
      run.finishedAt = now();
      runs.set(run.id, run);
      while (runs.size > keep) runs.delete(runs.keys().next().value!);
      return run;
    },
  };
}
