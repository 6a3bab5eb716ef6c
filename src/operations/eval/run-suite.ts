import type { EvalCase } from './case-schema.js';
import { runCase, type CaseResult, type RunCaseOptions } from './run-case.js';

export interface SuiteSummary {
  cases: number;
  passed: number;
  /** passed / cases */
  successRate: number;
  meanSteps: number;
  meanToolAccuracy: number;
  tokensIn: number;
  tokensOut: number;
  meanLatencyMs: number;
}

/** What `--out` writes and `--compare` reads. */
export interface SuiteResult {
  version: 1;
  startedAt: string;
  model: string;
  baseURL: string;
  scripted: boolean;
  summary: SuiteSummary;
  cases: CaseResult[];
}

export interface SuiteHooks {
  /**
   * Before each case, with {{web}} already filled in (the scripted mode points the fake server at
   * the case's script here).
   */
  beforeCase?(c: EvalCase): void | Promise<void>;
  afterCase?(r: CaseResult): void;
}

/** Runs cases one after another: cases share the model, and parallel runs would skew latency. */
export async function runSuite(cases: EvalCase[], opts: RunCaseOptions & { scripted?: boolean }, hooks: SuiteHooks = {}): Promise<SuiteResult> {
  const startedAt = new Date().toISOString();
  const results: CaseResult[] = [];
  for (const c of cases) {
    const r = await runCase(c, { ...opts, onCaseReady: hooks.beforeCase });
    results.push(r);
    hooks.afterCase?.(r);
  }
  return {
    version: 1,
    startedAt,
    // An empty value counts as unset, as in config-env.ts (presentValues).
    model: opts.env.HERMES_MODEL?.trim() || 'gpt-4o-mini',
    baseURL: opts.env.OPENAI_BASE_URL?.trim() || 'https://api.openai.com/v1',
    scripted: opts.scripted ?? false,
    summary: summariseResults(results),
    cases: results,
  };
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export function summariseResults(results: CaseResult[]): SuiteSummary {
  const passed = results.filter((r) => r.passed).length;
  return {
    cases: results.length,
    passed,
    successRate: results.length ? passed / results.length : 0,
    meanSteps: mean(results.map((r) => r.steps)),
    meanToolAccuracy: mean(results.map((r) => r.toolAccuracy)),
    tokensIn: results.reduce((n, r) => n + r.tokensIn, 0),
    tokensOut: results.reduce((n, r) => n + r.tokensOut, 0),
    meanLatencyMs: Math.round(mean(results.map((r) => r.latencyMs))),
  };
}
