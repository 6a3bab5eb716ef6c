import { appendFile, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { createOpenAIProvider } from '../../src/runtime/provider/openai-provider.js';
import { toToolSpec } from '../../src/capabilities/toolkit/json-schema.js';
import pino from 'pino';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { FAKE_CREDENTIALS, FAKE_GITHUB_TOKEN, FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { formToken, serveDashboard, TOKEN, type Served } from './dashboard-helper.js';
import { turnLines } from './trace-lines.js';

/**
 * The pages over a real trace: one turn driven through the real core (fake OpenAI server, real
 * calculator) with hostile text in the user message and in the tool arguments, plus hand-written
 * lines for the filters and an old-style trace line holding secrets in clear.
 */

let h: Harness;
let d: Served;
let cookie: string;
let turnId: string;
const XSS = '<script>alert("pwned")</script>';
/** A configured secret of no known shape (like a random hex token): only its value can find it. */
const CONFIGURED = 'f3a9c1d2e4b5a6f7c8d9e0a1b2c3d4e5<&>';
const evalsDir = () => path.join(h.dataDir, 'evals');

async function page(p: string): Promise<string> {
  const res = await d.get(p, { cookie });
  expect(res.status, p).toBe(200);
  return res.text();
}

function suite(model: string, startedAt: string, passed: Record<string, boolean>) {
  const cases = Object.entries(passed).map(([name, ok]) => ({ name, tags: [], passed: ok, checks: [{ check: 'answer', ok, detail: ok ? '' : 'wrong' }], steps: ok ? 2 : 4, toolCalls: [], toolAccuracy: 1, tokensIn: 100, tokensOut: 10, latencyMs: 50, finalAnswer: '' }));
  const n = cases.filter((c) => c.passed).length;
  return { version: 1, startedAt, model, baseURL: 'http://127.0.0.1:1/v1', scripted: true, summary: { cases: cases.length, passed: n, successRate: n / cases.length, meanSteps: 3, meanToolAccuracy: 1, tokensIn: 100 * cases.length, tokensOut: 10 * cases.length, meanLatencyMs: 50 }, cases };
}

beforeAll(async () => {
  h = await startHarness({ tools: [calculator] });
  h.fake.enqueue(
    { toolCalls: [{ id: 'c1', name: 'calculator', arguments: { expression: XSS } }] },
    { toolCalls: [{ id: 'c2', name: 'calculator', arguments: { expression: '6 * 7' } }] },
    { text: `6 * 7 = 42 ${XSS}` },
  );
  await h.core.gateway.handleMessage({ id: 'm1', conversation: conv('C1', { isDm: true }), speaker: user('U1'), text: `hello ${XSS} my key is ${FAKE_OPENAI_KEY}`, mentioned: false, replyTo: 'ts1' });
  await h.port.waitFor(isText, 30_000);
  await h.core.flushTraces();
  const traces = path.join(h.dataDir, 'traces');
  // Older traces written before a shape was known: the page must redact them itself.
  const leaky = [...FAKE_CREDENTIALS.map((c) => c.text), `dashboard ${TOKEN}`, `configured ${CONFIGURED}`].join(' | ');
  await appendFile(path.join(traces, '2026-01-05.jsonl'), turnLines('leaky-turn', new Date('2026-01-05T08:00:00Z'), { userKey: 'slack:T1:U5', text: `old ${leaky}`, result: `token ${FAKE_GITHUB_TOKEN}`, args: { note: leaky } }));
  for (let i = 0; i < 120; i++) {
    const at = new Date(Date.parse('2026-01-06T00:00:00Z') + i * 60_000);
    await appendFile(path.join(traces, '2026-01-06.jsonl'), turnLines(`bulk-${String(i).padStart(3, '0')}`, at, {
      platform: i % 2 ? 'discord' : 'slack', userKey: i % 3 ? 'slack:T1:U7' : 'discord:G1:99', tool: i % 4 ? 'calculator' : 'web_search', toolOk: i % 5 !== 0,
      outcome: i % 10 ? 'answered' : 'max_steps', text: i === 7 ? 'the Purple Elephant question' : `bulk question ${i}`,
    }));
  }
  await mkdir(evalsDir(), { recursive: true });
  await writeFile(path.join(evalsDir(), 'run-a.json'), JSON.stringify(suite('model-a', '2026-01-01T00:00:00.000Z', { add: true, search: false, xss: true })));
  await writeFile(path.join(evalsDir(), 'run-b.json'), JSON.stringify(suite('model-b', '2026-01-02T00:00:00.000Z', { add: false, search: true, [XSS]: true })));
  await writeFile(path.join(evalsDir(), 'broken.json'), '{"not": "a result"}');
  d = await serveDashboard({
    tracesDir: traces, evalsDir: evalsDir(), secrets: [CONFIGURED],
    replay: {
      defaultModel: 'gpt-4o-mini',
      provider: (model) => createOpenAIProvider({ ...h.config.model, model, log: pino({ level: 'silent' }) }),
      specs: () => [toToolSpec(calculator)],
      timeoutMs: 1_500,
    },
  });
  cookie = await d.signIn();
  const list = await page('/dashboard/turns?platform=slack&user=U1');
  turnId = decodeURIComponent(/href="\/dashboard\/turns\/([^"?]+)"/.exec(list)![1]!);
}, 60_000);

afterAll(async () => {
  await d?.close();
  await h?.close();
  await rm(path.join(h.dataDir, 'evals'), { recursive: true, force: true });
});

describe('dashboard pages', () => {
  it('lists turns newest first with their tools and outcome', async () => {
    const list = await page('/dashboard/turns');
    expect(list).toContain('122 turns');
    const rows = [...list.matchAll(/<tr><td><a href="\/dashboard\/turns\/([^"]+)"/g)].map((m) => decodeURIComponent(m[1]!));
    expect(rows[0]).toBe(turnId); // today's real turn is the newest
    expect(rows[1]).toBe('bulk-119');
    expect(rows).toHaveLength(50);
  });

  it('shows user text and tool arguments inert: escaped, never as markup', async () => {
    for (const p of ['/dashboard/turns', `/dashboard/turns/${encodeURIComponent(turnId)}`]) {
      const html = await page(p);
      expect(html).not.toContain('<script>alert');
      expect(html).toContain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
      // The only script tags are ours (none on these pages, which have no charts).
      expect(html.match(/<script/g) ?? []).toHaveLength(0);
    }
  });

  it('shows the whole timeline: prompt as sent, response, tool calls with arguments, result, duration, error kind, tokens', async () => {
    const html = await page(`/dashboard/turns/${encodeURIComponent(turnId)}`);
    expect(html).toContain('Prompt as sent');
    expect(html.match(/class="event model"/g)).toHaveLength(3);
    expect(html.match(/data-tool="calculator"/g)).toHaveLength(2);
    expect(html).toMatch(/failed \(\w+\)/); // the hostile expression did not evaluate
    expect(html).toContain('6 * 7');
    expect(html).toMatch(/<pre>42<\/pre>/);
    expect(html).toMatch(/\d+ in \/ \d+ out tokens/);
    expect(html).toMatch(/Turn ended · answered/);
  });

  it('never shows a secret: not from today\'s traces, not from an old unredacted line', async () => {
    const pages = await Promise.all(['/dashboard/turns', '/dashboard/turns?text=old', `/dashboard/turns/${encodeURIComponent(turnId)}`, '/dashboard/turns/leaky-turn', '/dashboard/stats', '/dashboard/evals'].map(page));
    for (const html of pages) {
      expect(html).not.toContain(FAKE_OPENAI_KEY);
      expect(html).not.toContain(FAKE_GITHUB_TOKEN);
      expect(html).not.toContain(TOKEN);
      for (const c of FAKE_CREDENTIALS) expect(html, c.shape).not.toContain(c.secret);
      expect(html).not.toContain(CONFIGURED.slice(0, 32));
    }
    expect(pages[3]).toContain('[redacted]');
  });

  it('filters by platform, user, outcome, tool and text, and pages through the rest', async () => {
    const count = async (q: string) => Number(/(\d+) turns?/.exec(await page(`/dashboard/turns${q}`))![1]);
    expect(await count('?platform=discord')).toBe(60);
    expect(await count('?user=99')).toBe(40);
    expect(await count('?outcome=max_steps')).toBe(12);
    expect(await count('?tool=web_search')).toBe(30);
    expect(await count('?text=purple%20elephant')).toBe(1);
    expect(await count('?platform=discord&outcome=max_steps')).toBe(0);
    expect(await count('?platform=slack&tool=calculator&user=U1')).toBe(1);
    const third = await page('/dashboard/turns?page=3');
    expect(third).toContain('page 3 of 3');
    expect(third.match(/<tr><td><a /g)).toHaveLength(22);
  });

  it('shows per-tool stats and daily charts drawn with uPlot from this server', async () => {
    const html = await page('/dashboard/stats?days=365');
    const table = /<table id="tool-stats">[\s\S]*?<\/table>/.exec(html)![0];
    expect(table).toMatch(/<td>calculator<\/td><td class="num">\d+<\/td>/);
    expect(table).toMatch(/<td>web_search<\/td><td class="num">30<\/td><td class="num">\d+\.\d%<\/td>/);
    expect(html).toContain('<script src="/dashboard/assets/uplot.js"></script>');
    expect(html).toMatch(/<script type="application\/json" id="chart-outcomes">\{"title"/);
    const uplot = await d.get('/dashboard/assets/uplot.js');
    expect(uplot.status).toBe(200);
    expect(await uplot.text()).toContain('uPlot');
  });

  it('lists eval runs and compares two per case', async () => {
    const html = await page('/dashboard/evals?a=run-a.json&b=run-b.json');
    expect(html).toMatch(/model-a[\s\S]*66\.7%/);
    expect(html).toContain('broken.json: not an eval result file');
    const table = /<table id="compare">[\s\S]*?<\/table>/.exec(html)![0];
    expect(table).toMatch(/<td>add<\/td><td><span class="ok">pass<\/span><\/td><td><span class="bad">FAIL<\/span><\/td><td class="bad">broken<\/td>/);
    expect(table).toMatch(/<td>search<\/td>.*<td class="ok">fixed<\/td>/);
    expect(table).toMatch(/<td>xss<\/td>.*gone/);
    expect(table).toContain('<td>&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;</td>');
  });

  it('replays a turn against another model and shows both side by side; one replay at a time', async () => {
    const turnPage = await page(`/dashboard/turns/${encodeURIComponent(turnId)}`);
    const form_token = formToken(turnPage);
    h.fake.enqueue({ toolCalls: [{ id: 'r1', name: 'calculator', arguments: { expression: '1+1' } }] }, { text: 'different' }, { text: 'forty-two' });
    const res = await d.post(`/dashboard/turns/${encodeURIComponent(turnId)}/replay`, { form_token, model: 'other-model' }, { cookie });
    expect(res.status).toBe(303);
    const shown = await page(res.headers.get('location')!);
    expect(shown).toContain('Replay (other-model)');
    expect(shown).toMatch(/Recorded \(gpt-4o-mini\)/);
    expect(shown.match(/<tr><td>\d+<\/td>/g)).toHaveLength(3);
    expect(shown).toContain('different path');
    expect(h.fake.requests.at(-1)?.model).toBe('other-model');

    // A hanging model: the second request is refused while the first runs, which stops at its time limit.
    h.fake.enqueue({ hang: true });
    const first = d.post(`/dashboard/turns/${encodeURIComponent(turnId)}/replay`, { form_token, model: 'slow-model' }, { cookie });
    await expect.poll(() => h.fake.requests.at(-1)?.model, { timeout: 5_000 }).toBe('slow-model');
    const second = await d.post(`/dashboard/turns/${encodeURIComponent(turnId)}/replay`, { form_token, model: 'other-model' }, { cookie });
    expect(second.status).toBe(429);
    expect(await second.text()).toContain('Another replay is running');
    const done = await first;
    expect(done.status).toBe(303);
    expect(await page(done.headers.get('location')!)).toContain('The replay was stopped after 2 s');
    const bad = await d.post(`/dashboard/turns/${encodeURIComponent(turnId)}/replay`, { form_token, model: 'bad model; rm' }, { cookie });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('Give a model name');
  });

  it('answers an unknown turn with 404 and a way back', async () => {
    const res = await d.get('/dashboard/turns/does-not-exist', { cookie });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('No turn does-not-exist in the traces.');
  });
});
