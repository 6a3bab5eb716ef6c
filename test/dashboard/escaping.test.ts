import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAIProvider } from '../../src/runtime/provider/openai-provider.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { formToken, serveDashboard, type Served } from './dashboard-helper.js';
import { line } from './trace-lines.js';

/**
 * Every page against a trace in which every field a page shows is hostile markup: platform, user,
 * message, model and tool names, arguments, results, error kinds, outcomes, approvals, sub-agents,
 * eval result files, a replayed model's answer, and the query string the filters echo back. No page
 * may contain the markup as markup; a browser would run it (see browser.e2e.test.ts for the real one).
 */

const X = `"'><img src=x onerror=alert(1)><script>alert(1)</script></pre></table>`;
const SAFE_SCRIPTS = /<script (?:src="\/dashboard\/assets\/(?:uplot|charts)\.js"|type="application\/json" id="chart-(?:outcomes|tokens)")>/g;

let dir: string;
let fake: FakeOpenAI;
let d: Served;
let cookie: string;

function hostileTurn(turnId: string, at: number): string {
  const ts = (ms: number) => new Date(at + ms).toISOString();
  const call = { id: `c${X}`, name: `tool${X}`, arguments: JSON.stringify({ q: X }) };
  return [
    line(ts(0), { type: 'turn_start', turnId, sessionId: `s${X}`, platform: `p${X}`, userKey: `u${X}`, text: `m${X}` }),
    line(ts(1), { type: 'model_call', turnId, step: 1, model: `model${X}`, requestModel: `req${X}`, messages: [{ role: `r${X}`, content: X, name: X, toolCalls: [{ name: X, arguments: X }] }], tools: [X], response: { content: X, toolCalls: [call], parseErrors: [X] }, usage: { promptTokens: 5, completionTokens: 1 }, latencyMs: 3, error: X }),
    line(ts(2), { type: 'model_call', turnId, step: 1, agent: `agent${X}`, parentCallId: call.id, model: X, messages: [], tools: [], response: { content: X, toolCalls: [], parseErrors: [] }, latencyMs: 1 }),
    line(ts(3), { type: 'subagent', turnId, callId: call.id, agent: `agent${X}`, outcome: X, steps: 1, durationMs: 2, promptTokens: 1, completionTokens: 1 }),
    line(ts(4), { type: 'tool_call', turnId, callId: call.id, name: call.name, args: { q: X }, ok: false, errorKind: `kind${X}`, result: `res${X}`, durationMs: 2 }),
    line(ts(5), { type: 'approval', turnId, approvalId: `a${X}`, tool: `t${X}`, status: `st${X}`, by: `by${X}` }),
    line(ts(6), { type: `odd${X}`, turnId, note: X }),
    line(ts(7), { type: 'turn_end', turnId, outcome: `o${X}`, steps: 1, durationMs: 7, promptTokens: 5, completionTokens: 1 }),
    line(ts(8), { type: 'refusal', reason: `why${X}`, source: 'message', platform: X, userKey: X }),
  ].join('');
}

function hostileSuite(startedAt: string) {
  const c = { name: `case${X}`, tags: [X], passed: false, checks: [{ check: X, ok: false, detail: X }], steps: 1, toolCalls: [X], toolAccuracy: 0, tokensIn: 1, tokensOut: 1, latencyMs: 1, finalAnswer: X };
  return { version: 1, startedAt, model: `model${X}`, baseURL: 'http://127.0.0.1:1/v1', scripted: false, summary: { cases: 1, passed: 0, successRate: 0, meanSteps: 1, meanToolAccuracy: 0, tokensIn: 1, tokensOut: 1, meanLatencyMs: 1 }, cases: [c] };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-dash-xss-'));
  const traces = path.join(dir, 'traces');
  const evals = path.join(dir, 'evals');
  await mkdir(traces);
  await mkdir(evals);
  const now = Date.now();
  await writeFile(path.join(traces, `${new Date(now).toISOString().slice(0, 10)}.jsonl`), hostileTurn('hostile', now - 60_000));
  await writeFile(path.join(evals, 'a.json'), JSON.stringify(hostileSuite('2026-01-01T00:00:00.000Z')));
  await writeFile(path.join(evals, 'b.json'), JSON.stringify(hostileSuite('2026-01-02T00:00:00.000Z')));
  await writeFile(path.join(evals, `bad${X.replace(/[/"]/g, '')}.json`), X);
  fake = await startFakeOpenAI();
  d = await serveDashboard({
    tracesDir: traces,
    evalsDir: evals,
    replay: {
      defaultModel: 'gpt-4o-mini',
      provider: (model) => createOpenAIProvider({ apiKey: 'test-key', baseURL: fake.url, model, temperature: 0, maxTokens: 100, timeoutMs: 5_000, maxRetries: 0, toolMode: 'native', log: pino({ level: 'silent' }) }),
      specs: () => [],
    },
  });
  cookie = await d.signIn();
}, 60_000);

afterAll(async () => {
  await d?.close();
  await fake?.close();
  await rm(dir, { recursive: true, force: true });
});

function expectInert(page: string, where: string): void {
  expect(page, where).not.toContain('<img');
  expect(page, where).not.toContain('<script>');
  expect(page, where).not.toMatch(/<\/pre><\/table>/);
  expect(page.replace(SAFE_SCRIPTS, ''), where).not.toContain('<script');
  // Every hostile value arrived (escaped), so the check above was not passed by showing nothing.
  expect(page, where).toContain('&lt;img src=x onerror=alert(1)&gt;');
}

describe('escaping on every page', () => {
  it('shows hostile trace content, eval files, replays and echoed filters as text only', async () => {
    const q = encodeURIComponent(X);
    const pages = [
      '/dashboard/turns',
      `/dashboard/turns?user=${q}&text=${q}&platform=${q}&outcome=${q}&tool=${q}`,
      '/dashboard/turns/hostile',
      '/dashboard/stats',
      '/dashboard/evals?a=a.json&b=b.json',
      `/dashboard/turns/${q}`,
    ];
    for (const p of pages) {
      const res = await d.get(p, { cookie });
      expectInert(await res.text(), p);
    }
    const login = await (await d.get(`/dashboard/login?next=${encodeURIComponent(`/dashboard/turns?text=${X}`)}`)).text();
    expect(login).not.toContain('<img');

    fake.enqueue({ text: X });
    const turn = await (await d.get('/dashboard/turns/hostile', { cookie })).text();
    const res = await d.post('/dashboard/turns/hostile/replay', { form_token: formToken(turn), model: 'other-model' }, { cookie });
    expect(res.status).toBe(303);
    expectInert(await (await d.get(res.headers.get('location')!, { cookie })).text(), 'replay');
  });
});
