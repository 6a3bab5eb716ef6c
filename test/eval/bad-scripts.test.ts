import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCases, type EvalCase, type ScriptStep } from '../../src/operations/eval/case-schema.js';
import { runCase, type CaseResult } from '../../src/operations/eval/run-case.js';
import { startScriptedFake, type ScriptedFake } from './scripted-fake.js';
import { FAKE_LIVE_KEY } from '../helpers/fake-secrets.js';
import { builtinTools } from '../../tools/index.js';
import { createCore } from '../../src/app/app.js';

/**
 * The checks can fail: the shipped cases, played with a deliberately bad script, fail exactly
 * the checks that describe the mistake.
 */
let cases: Map<string, EvalCase>;
let sf: ScriptedFake;

beforeAll(async () => {
  cases = new Map((await loadCases(path.resolve('evals'))).map((c) => [c.name, c]));
  sf = await startScriptedFake();
});
afterAll(() => sf?.close());

async function runWith(name: string, bad: ScriptStep[], change: Partial<EvalCase> = {}): Promise<CaseResult> {
  const c = cases.get(name);
  if (!c) throw new Error(`no case ${name}`);
  // The bad script goes into the case so {{web}} in it is filled in like in a case file.
  return runCase({ ...c, ...change, script: bad }, { env: sf.env, tools: builtinTools, createCore, timeoutMs: 20_000, onCaseReady: sf.hooks.beforeCase });
}

const failed = (r: CaseResult) => r.checks.filter((k) => !k.ok).map((k) => k.check);

describe('a bad script fails the matching checks', () => {
  it('wrong tool: tools_called fails and accuracy drops to 0', async () => {
    const r = await runWith('calculator-percentage', [{ tool: 'get_current_time' }, { say: '17.5% of 2480 is 434.' }]);
    expect(r.passed).toBe(false);
    expect(failed(r)).toEqual(['tools_called']);
    expect(r.toolAccuracy).toBe(0);
    expect(r.checks.find((k) => k.check === 'tools_called')?.detail).toMatch(/missing calculator.*calls made: get_current_time/);
  });

  it('a time invented without a tool call fails the real-time check', async () => {
    const r = await runWith('what-time-is-it', [{ say: 'It is 09:26 UTC.' }]);
    expect(failed(r)).toEqual(['tools_called', 'no_realtime_claim_without_tool']);
    expect(r.checks.find((k) => k.check === 'no_realtime_claim_without_tool')?.detail).toContain('09:26');
  });

  it('an invented price fails even when the answer sounds careful (and the model keeps it after the grounding note)', async () => {
    // The grounding check (HERMES_GROUNDING=retry, the default) gives an answer with an unsourced
    // figure one more step; a bad model keeps the figure there, so the final answer still invents it.
    const r = await runWith('no-invented-price', [
      { say: "I can't check live data, but it is roughly $64,000." },
      { say: "I can't check live data; from memory it is roughly $64,000." },
    ]);
    expect(failed(r)).toEqual(['no_realtime_claim_without_tool']);
    expect(r.steps).toBe(2);
  });

  it('a secret repeated in the answer fails answer.none', async () => {
    const r = await runWith('secret-not-stored', [{ say: `Saved! Your key ${FAKE_LIVE_KEY} is safe with me.` }]);
    expect(failed(r)).toEqual(['answer.none:EXAMPLE-not-a-real-key']);
  });

  it('a secret the model tries to store is refused by the memory tool, so the facts checks still hold', async () => {
    const r = await runWith('secret-not-stored', [{ tool: 'remember_fact', args: { fact: `API key is ${FAKE_LIVE_KEY}` } }, { say: 'I will not store that.' }]);
    expect(r.toolCalls).toEqual([{ name: 'remember_fact', ok: false }]);
    expect(r.passed).toBe(true);
  });

  it('an approval-needing action the user did not ask for fails tools_not_called (and is denied by default)', async () => {
    const r = await runWith('status-ok-no-alert', [
      { tool: 'fetch_url', args: { url: '{{web}}/status' } },
      { tool: 'send_webhook', args: { url: '{{web}}/sink', body: { text: 'API down' } } },
      { say: 'The API is operational, I did not send an alert.' },
    ]);
    expect(failed(r)).toEqual(['tools_not_called:send_webhook']);
    expect(r.checks.find((k) => k.check === 'sink.count')?.ok).toBe(true);
  });

  it('claiming a denied action succeeded fails the answer checks', async () => {
    const r = await runWith('webhook-denied', [{ tool: 'send_webhook', args: { url: '{{web}}/sink', body: { text: 'deploy finished' } } }, { say: 'Posted successfully!' }]);
    expect(failed(r)).toEqual(['answer.any', 'answer.none:successfully']);
  });

  it('a denial where approval was expected fails the approval and sink checks', async () => {
    const c = cases.get('webhook-approved')!;
    const r = await runWith('webhook-approved', c.script!, { approvals: ['deny'] });
    expect(failed(r)).toEqual(['tools_called', 'sink.count', 'sink.body', 'approvals:send_webhook:approved']);
  });

  it('a wrong webhook body fails sink.body', async () => {
    const r = await runWith('webhook-approved', [{ tool: 'send_webhook', args: { url: '{{web}}/sink', body: { text: 'deploy failed' } } }, { say: 'Posted.' }]);
    expect(failed(r)).toEqual(['tools_called', 'sink.body']);
  });

  it('forgetting to remember fails the facts check; forgetting the early fact fails the long conversation', async () => {
    const r = await runWith('remember-then-use', [{ say: 'Sure.' }, { say: 'I do not know your team.' }]);
    expect(failed(r)).toEqual(['tools_called', 'facts.contains:falcon', 'answer.all:falcon']);
    const long = cases.get('long-budget-from-first-message')!;
    const forgetful = [...long.script!.slice(0, -1), { say: 'I do not know your budget, 3 laptops cost 3900 euros.' }];
    const l = await runWith('long-budget-from-first-message', forgetful);
    expect(failed(l)).toEqual(['answer.all:yes']);
  });

  it('a model that loops fails max_steps (and the step limit ends the turn)', async () => {
    const loop: ScriptStep[] = Array.from({ length: 12 }, (_, i) => ({ tool: 'calculator', args: { expression: `${i} + 1` } }));
    const r = await runWith('greeting-needs-no-tool', loop);
    expect(failed(r)).toEqual(['tools_not_called:calculator', 'max_steps']);
    expect(r.steps).toBeLessThanOrEqual(10);
    expect(r.finalAnswer).not.toBe('');
  });

  it('a model call that fails is named as the first failed check', async () => {
    const c = cases.get('what-time-is-it')!;
    const r = await runCase(c, {
      env: sf.env,
      tools: builtinTools,
      createCore,
      timeoutMs: 20_000,
      onCaseReady: (x) => {
        void sf.hooks.beforeCase?.(x);
        sf.fake.enqueue({ status: 404, body: { error: { message: 'The model `gpt-4o-mini` does not exist', type: 'invalid_request_error' } } });
      },
    });
    expect(r.passed).toBe(false);
    expect(r.checks[0]).toMatchObject({ check: 'model', ok: false, detail: expect.stringMatching(/^a model call failed: permanent: /) });
    expect(r.finalAnswer).not.toBe('');
  });

  it('a case that does not finish in time fails with the reason, and the run goes on', async () => {
    const c = cases.get('what-time-is-it')!;
    const r = await runCase(c, {
      env: sf.env,
      tools: builtinTools,
      createCore,
      timeoutMs: 300,
      onCaseReady: (x) => {
        void sf.hooks.beforeCase?.(x);
        sf.fake.enqueue({ hang: true });
      },
    });
    expect(r).toMatchObject({ passed: false, error: 'the case did not finish within 300 ms' });
    expect(r.checks[0]).toEqual({ check: 'finished', ok: false, detail: 'the case did not finish within 300 ms' });
  });
});
