import { html, type Html } from '../html.js';
import type { EvalRun } from '../eval-runs.js';
import type { SuiteResult } from '../../eval/run-suite.js';
import type { CaseResult } from '../../eval/run-case.js';
import { BASE, fmtMs, layout, pct, type PageChrome } from './layout.js';

type Ok = Extract<EvalRun, { result: SuiteResult }>;

function runSelect(name: string, runs: Ok[], current: string | undefined): Html {
  return html`<label>${name.toUpperCase()}<select name="${name}"><option value="">—</option>${runs.map((r) => html`<option value="${r.file}"${r.file === current ? html` selected` : ''}>${r.result.startedAt} · ${r.result.model}</option>`)}</select></label>`;
}

const signed = (x: number, digits = 0) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

function comparison(a: Ok, b: Ok): Html {
  const ma = new Map(a.result.cases.map((c) => [c.name, c] as const));
  const mb = new Map(b.result.cases.map((c) => [c.name, c] as const));
  const names = [...new Set([...ma.keys(), ...mb.keys()])];
  const res = (c: CaseResult | undefined) => (c ? (c.passed ? html`<span class="ok">pass</span>` : html`<span class="bad">FAIL</span>`) : '—');
  const change = (x: CaseResult | undefined, y: CaseResult | undefined) => (!x ? 'new' : !y ? 'gone' : x.passed === y.passed ? '' : y.passed ? 'fixed' : 'broken');
  const pair = (x: CaseResult | undefined, y: CaseResult | undefined, f: (c: CaseResult) => number) => `${x ? f(x) : '—'} → ${y ? f(y) : '—'}`;
  const s = a.result.summary;
  const t = b.result.summary;
  return html`<h2>A: ${a.file} (${a.result.model}) · B: ${b.file} (${b.result.model})</h2>
<p>Success rate ${pct(s.successRate)} → ${pct(t.successRate)} (${signed((t.successRate - s.successRate) * 100, 1)} pts) · steps ${s.meanSteps.toFixed(2)} → ${t.meanSteps.toFixed(2)} · tokens ${s.tokensIn + s.tokensOut} → ${t.tokensIn + t.tokensOut} (${signed(t.tokensIn + t.tokensOut - s.tokensIn - s.tokensOut)})</p>
<table id="compare"><thead><tr><th>Case</th><th>A</th><th>B</th><th>Change</th><th class="num">Steps A → B</th><th class="num">Tokens A → B</th><th class="num">ms A → B</th></tr></thead><tbody>
${names.map((n) => {
    const x = ma.get(n);
    const y = mb.get(n);
    const c = change(x, y);
    return html`<tr><td>${n}</td><td>${res(x)}</td><td>${res(y)}</td><td class="${c === 'broken' ? 'bad' : c === 'fixed' ? 'ok' : ''}">${c}</td><td class="num">${pair(x, y, (k) => k.steps)}</td><td class="num">${pair(x, y, (k) => k.tokensIn + k.tokensOut)}</td><td class="num">${pair(x, y, (k) => k.latencyMs)}</td></tr>`;
  })}</tbody></table>`;
}

export function evalsPage(runs: EvalRun[], dir: string, pick: { a?: string; b?: string }, chrome: PageChrome) {
  const ok = runs.filter((r): r is Ok => 'result' in r);
  const a = ok.find((r) => r.file === pick.a);
  const b = ok.find((r) => r.file === pick.b);
  const body = html`<h1>Eval runs</h1>
<p class="muted">Result files of <code>npm run eval</code> in ${dir}.</p>
<table id="runs"><thead><tr><th>Started</th><th>Model</th><th>File</th><th class="num">Cases</th><th class="num">Success rate</th><th class="num">Steps (mean)</th><th class="num">Tokens in / out</th><th class="num">Latency (mean)</th></tr></thead><tbody>
${runs.map((r) =>
    'result' in r
      ? html`<tr><td>${r.result.startedAt}</td><td>${r.result.model}${r.result.scripted ? ' (scripted)' : ''}</td><td>${r.file}</td><td class="num">${r.result.summary.passed}/${r.result.summary.cases}</td><td class="num">${pct(r.result.summary.successRate)}</td><td class="num">${r.result.summary.meanSteps.toFixed(2)}</td><td class="num">${r.result.summary.tokensIn} / ${r.result.summary.tokensOut}</td><td class="num">${fmtMs(r.result.summary.meanLatencyMs)}</td></tr>`
      : html`<tr><td colspan="8" class="bad">${r.file}: ${r.problem}</td></tr>`,
  )}</tbody></table>
${runs.length === 0 ? html`<p class="muted">No eval runs yet: run <code>npm run eval</code>; its result files appear here.</p>` : ''}
${ok.length >= 2 ? html`<h2>Compare two runs</h2><form class="filters" method="get" action="${BASE}/evals">${runSelect('a', ok, pick.a)}${runSelect('b', ok, pick.b)}<button type="submit">Compare</button></form>` : ''}
${a && b ? comparison(a, b) : ''}`;
  return layout('Eval runs', body, chrome);
}
