import type { FeedbackSummary } from '../../../state/feedback/feedback-store.js';
import { html, jsonBlock, type Html } from '../html.js';
import type { DashboardStats } from '../turn-query.js';
import { BASE, fmtMs, layout, pct, type PageChrome } from './layout.js';

const epochS = (day: string) => Date.parse(`${day}T00:00:00Z`) / 1000;

function chart(id: string, title: string, s: DashboardStats, series: Array<{ label: string; values: number[] }>): Html {
  return html`<div class="chart" data-chart="${id}">${title}: enable JavaScript to see the chart; the numbers are in the table below.</div>${jsonBlock(id, { title, x: s.days.map((d) => epochS(d.day)), series })}`;
}

/** Votes on answers in the window; nothing shown when the dashboard has no vote store. */
function feedbackSection(f: FeedbackSummary | 'unavailable' | undefined): Html | string {
  if (f === undefined) return '';
  if (f === 'unavailable') return html`<h2>Feedback</h2><p class="muted">The votes could not be read.</p>`;
  const total = f.up + f.down;
  return html`<h2>Feedback</h2><table id="feedback-stats"><tbody>
<tr><td>👍 up</td><td class="num">${f.up}</td></tr><tr><td>👎 down</td><td class="num">${f.down}</td></tr>
<tr><td>Share up</td><td class="num">${total ? pct(f.up / total) : '–'}</td></tr><tr><td>Turns voted on</td><td class="num">${f.turns}</td></tr>
</tbody></table>`;
}

export function statsPage(s: DashboardStats, days: number, chrome: PageChrome, feedback?: FeedbackSummary | 'unavailable') {
  const outcomeSeries = s.outcomes.map((o) => ({ label: o, values: s.days.map((d) => d.outcomes[o] ?? 0) }));
  const tokenSeries = [
    { label: 'prompt tokens', values: s.days.map((d) => d.promptTokens) },
    { label: 'completion tokens', values: s.days.map((d) => d.completionTokens) },
  ];
  const refusals = Object.entries(s.refusals);
  const body = html`<h1>Stats</h1>
<form class="filters" method="get" action="${BASE}/stats"><label>Days<select name="days">${[1, 7, 30, 90, 365].map((d) => html`<option value="${d}"${d === days ? html` selected` : ''}>last ${d}</option>`)}</select></label><button type="submit">Show</button></form>
<p class="muted">${s.turns} turns in the last ${days} day(s) (UTC days).</p>
${feedbackSection(feedback)}
<h2>Tools</h2>
<table id="tool-stats"><thead><tr><th>Tool</th><th class="num">Calls</th><th class="num">Success rate</th><th class="num">p50</th><th class="num">p95</th><th>Failures</th></tr></thead><tbody>
${s.tools.map((t) => html`<tr><td>${t.name}</td><td class="num">${t.calls}</td><td class="num">${pct(t.successRate)}</td><td class="num">${fmtMs(t.p50Ms)}</td><td class="num">${fmtMs(t.p95Ms)}</td><td>${Object.entries(t.errorKinds).map(([k, n], i) => html`${i ? ', ' : ''}${k} ${n}`)}</td></tr>`)}
</tbody></table>
${s.tools.length === 0 ? html`<p class="muted">No tool calls in this window.</p>` : ''}
<h2>Outcomes per day</h2>
${chart('chart-outcomes', 'Turns per day by outcome', s, outcomeSeries)}
<h2>Tokens per day</h2>
${chart('chart-tokens', 'Tokens per day', s, tokenSeries)}
<details><summary>Numbers per day</summary><table id="per-day"><thead><tr><th>Day</th>${s.outcomes.map((o) => html`<th class="num">${o}</th>`)}<th class="num">Prompt tokens</th><th class="num">Completion tokens</th></tr></thead><tbody>
${s.days.map((d) => html`<tr><td>${d.day}</td>${s.outcomes.map((o) => html`<td class="num">${d.outcomes[o] ?? 0}</td>`)}<td class="num">${d.promptTokens}</td><td class="num">${d.completionTokens}</td></tr>`)}
</tbody></table></details>
${refusals.length ? html`<h2>Refused requests</h2><table><tbody>${refusals.map(([k, n]) => html`<tr><td>${k}</td><td class="num">${n}</td></tr>`)}</tbody></table>` : ''}`;
  return layout('Stats', body, { ...chrome, charts: true });
}
