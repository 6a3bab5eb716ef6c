import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCases, type EvalCase } from '../../src/operations/eval/case-schema.js';
import { runSuite, type SuiteResult } from '../../src/operations/eval/run-suite.js';
import { startScriptedFake, type ScriptedFake } from './scripted-fake.js';
import { builtinTools } from '../../tools/index.js';
import { createCore } from '../../src/app/app.js';

/** Every shipped case passes when the model plays its ideal script: the harness itself works. */
let cases: EvalCase[];
let sf: ScriptedFake;
let result: SuiteResult;

beforeAll(async () => {
  cases = await loadCases(path.resolve('evals'));
  sf = await startScriptedFake();
  result = await runSuite(cases, { env: sf.env, tools: builtinTools, createCore, timeoutMs: 20_000, scripted: true }, sf.hooks);
}, 60_000);
afterAll(() => sf?.close());

describe('the shipped eval suite against its scripts', () => {
  it('has at least 25 cases covering every category', () => {
    expect(cases.length).toBeGreaterThanOrEqual(25);
    const tags = new Set(cases.flatMap((c) => c.tags));
    for (const t of ['single-tool', 'sequence', 'conditional', 'memory', 'approval', 'decline', 'realtime', 'recovery', 'long', 'delegation']) expect(tags, t).toContain(t);
    expect(cases.some((c) => c.approvals.includes('deny'))).toBe(true);
    expect(cases.some((c) => c.messages.length >= 12)).toBe(true);
    expect(cases.every((c) => c.script && c.script.length > 0)).toBe(true);
  });

  it('passes every case, each check of it', () => {
    const failures = result.cases.filter((r) => !r.passed).map((r) => `${r.name}: ${r.checks.filter((k) => !k.ok).map((k) => `${k.check} (${k.detail})`).join('; ')}${r.error ? ` error: ${r.error}` : ''}`);
    expect(failures).toEqual([]);
    expect(result.summary.successRate).toBe(1);
    expect(result.cases.every((r) => r.checks.length > 0)).toBe(true);
  });

  it('went through the HTTP model: every step is a request the fake server saw, with real token counts', () => {
    const steps = result.cases.reduce((n, r) => n + r.steps, 0);
    expect(sf.fake.requests.length).toBe(steps);
    expect(result.summary.tokensIn).toBeGreaterThan(0);
    expect(result.summary.tokensOut).toBeGreaterThan(0);
    const long = result.cases.find((r) => r.name === 'long-budget-from-first-message');
    expect(long?.steps).toBe(15);
    // The 13th message's request still carries the first message.
    const last = sf.fake.requests.find((r) => JSON.stringify(r.messages).includes('can we afford 3 laptops'));
    expect(JSON.stringify(last?.messages)).toContain('4200 euros');
  });

  it('plays sub-agents their own steps: the researcher answered under its own prompt, a failing one came back as a failed call', () => {
    const byName = new Map(result.cases.map((r) => [r.name, r]));
    const researcher = sf.fake.requests.filter((r) => String((r.messages[0] as { content?: unknown }).content).startsWith('You are the "researcher" sub-agent'));
    // 2 steps in delegate-to-researcher, 4 in parallel-research, 8 in subagent-runs-out-of-steps.
    expect(researcher).toHaveLength(14);
    expect(researcher.every((r) => !(r.tools ?? []).some((t) => (t as { function: { name: string } }).function.name === 'delegate'))).toBe(true);
    expect(byName.get('parallel-research')?.toolCalls.filter((c) => c.name === 'fetch_url')).toEqual([{ name: 'fetch_url', ok: true }, { name: 'fetch_url', ok: true }]);
    expect(byName.get('subagent-runs-out-of-steps')?.toolCalls.find((c) => c.name === 'delegate')).toEqual({ name: 'delegate', ok: false });
  });

  it('measures tool-call accuracy as expected calls matched over calls made', () => {
    const byName = new Map(result.cases.map((r) => [r.name, r]));
    expect(byName.get('what-time-is-it')?.toolAccuracy).toBe(1);
    // An invented tool name first, then the right one: 1 of 2 calls was expected.
    expect(byName.get('recover-bad-tool-name')?.toolAccuracy).toBe(0.5);
    expect(byName.get('decline-email')?.toolAccuracy).toBe(1);
  });
});
