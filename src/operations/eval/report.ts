import { readFile } from 'node:fs/promises';
import * as z from 'zod';
import type { CaseResult } from './run-case.js';
import type { SuiteResult, SuiteSummary } from './run-suite.js';

/** Plain-text tables for the terminal: one for a run, one for two runs side by side. */

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : ' '.repeat(n - s.length) + s);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function row(cells: Array<[string, number, 'l' | 'r']>): string {
  return cells.map(([s, n, a]) => (a === 'l' ? pad(s, n) : lpad(s, n))).join('  ').trimEnd();
}

export function summaryLine(s: SuiteSummary): string {
  return `Overall: ${s.passed}/${s.cases} passed (${pct(s.successRate)}), steps mean ${s.meanSteps.toFixed(2)}, tool-call accuracy ${s.meanToolAccuracy.toFixed(2)}, tokens ${s.tokensIn} in / ${s.tokensOut} out, latency mean ${s.meanLatencyMs} ms`;
}

export function formatSuite(r: SuiteResult): string[] {
  const w = Math.max(4, ...r.cases.map((c) => c.name.length));
  const lines = [
    `Model ${r.model} at ${r.baseURL}${r.scripted ? ' (scripted)' : ''}, ${r.startedAt}`,
    row([['case', w, 'l'], ['result', 6, 'l'], ['steps', 5, 'r'], ['acc', 4, 'r'], ['tok in', 7, 'r'], ['tok out', 7, 'r'], ['ms', 7, 'r']]),
  ];
  for (const c of r.cases) {
    lines.push(row([[c.name, w, 'l'], [c.passed ? 'pass' : 'FAIL', 6, 'l'], [String(c.steps), 5, 'r'], [c.toolAccuracy.toFixed(2), 4, 'r'], [String(c.tokensIn), 7, 'r'], [String(c.tokensOut), 7, 'r'], [String(c.latencyMs), 7, 'r']]));
    for (const k of c.checks.filter((x) => !x.ok)) lines.push(`    ✗ ${k.check}: ${k.detail}`);
  }
  lines.push(summaryLine(r.summary));
  return lines;
}

const signed = (x: number, digits = 2) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

/** Two result files side by side: per-case pass/fail changes, then the deltas of the rates. */
export function formatComparison(a: SuiteResult, b: SuiteResult, names: [string, string] = ['A', 'B']): string[] {
  const byName = (r: SuiteResult) => new Map(r.cases.map((c) => [c.name, c] as const));
  const ma = byName(a);
  const mb = byName(b);
  const all = [...new Set([...ma.keys(), ...mb.keys()])];
  const w = Math.max(4, ...all.map((n) => n.length));
  const res = (c: CaseResult | undefined) => (c ? (c.passed ? 'pass' : 'FAIL') : '-');
  const lines = [
    `A: ${names[0]} (${a.model}${a.scripted ? ', scripted' : ''}, ${a.startedAt})`,
    `B: ${names[1]} (${b.model}${b.scripted ? ', scripted' : ''}, ${b.startedAt})`,
    row([['case', w, 'l'], ['A', 4, 'l'], ['B', 4, 'l'], ['change', 8, 'l'], ['steps A→B', 10, 'r'], ['tokens A→B', 15, 'r'], ['ms A→B', 15, 'r']]),
  ];
  let fixed = 0;
  let broken = 0;
  for (const n of all) {
    const x = ma.get(n);
    const y = mb.get(n);
    let change = '';
    if (x && y && x.passed !== y.passed) {
      change = y.passed ? 'fixed' : 'broken';
      if (y.passed) fixed++;
      else broken++;
    } else if (!x) change = 'new';
    else if (!y) change = 'gone';
    const pair = (f: (c: CaseResult) => number) => `${x ? f(x) : '-'}→${y ? f(y) : '-'}`;
    lines.push(row([[n, w, 'l'], [res(x), 4, 'l'], [res(y), 4, 'l'], [change, 8, 'l'], [pair((c) => c.steps), 10, 'r'], [pair((c) => c.tokensIn + c.tokensOut), 15, 'r'], [pair((c) => c.latencyMs), 15, 'r']]));
  }
  const s = a.summary;
  const t = b.summary;
  lines.push(
    `Changed: ${fixed} fixed, ${broken} broken`,
    `Success rate: ${pct(s.successRate)} → ${pct(t.successRate)} (${signed((t.successRate - s.successRate) * 100, 1)} pts)`,
    `Steps per case: ${s.meanSteps.toFixed(2)} → ${t.meanSteps.toFixed(2)} (${signed(t.meanSteps - s.meanSteps)})`,
    `Tool-call accuracy: ${s.meanToolAccuracy.toFixed(2)} → ${t.meanToolAccuracy.toFixed(2)} (${signed(t.meanToolAccuracy - s.meanToolAccuracy)})`,
    `Tokens in: ${s.tokensIn} → ${t.tokensIn} (${signed(t.tokensIn - s.tokensIn, 0)}); out: ${s.tokensOut} → ${t.tokensOut} (${signed(t.tokensOut - s.tokensOut, 0)})`,
    `Latency mean: ${s.meanLatencyMs} → ${t.meanLatencyMs} ms (${signed(t.meanLatencyMs - s.meanLatencyMs, 0)})`,
  );
  return lines;
}

const caseResultSchema = z.looseObject({
  name: z.string(),
  passed: z.boolean(),
  steps: z.number(),
  toolAccuracy: z.number(),
  tokensIn: z.number(),
  tokensOut: z.number(),
  latencyMs: z.number(),
  checks: z.array(z.looseObject({ check: z.string(), ok: z.boolean(), detail: z.string() })),
});
const suiteResultSchema = z.looseObject({
  version: z.literal(1),
  startedAt: z.string(),
  model: z.string(),
  summary: z.looseObject({ cases: z.number(), passed: z.number(), successRate: z.number(), meanSteps: z.number(), meanToolAccuracy: z.number(), tokensIn: z.number(), tokensOut: z.number(), meanLatencyMs: z.number() }),
  cases: z.array(caseResultSchema),
});

/** Reads a result file written by `--out`; throws one clear line when it is not one. */
export async function readResultFile(file: string): Promise<SuiteResult> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: cannot read a result file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const parsed = suiteResultSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${file}: not an eval result file: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  // Validated above for the fields the tables read; the rest is shown as stored.
  return raw as SuiteResult;
}
