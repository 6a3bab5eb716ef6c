import { html } from '../html.js';
import type { TurnSummary } from '../turn-summaries.js';
import { filterChoices, filterQuery, UNFINISHED, type TurnFilter, type TurnPage } from '../turn-query.js';
import { BASE, fmtMs, fmtTime, layout, type PageChrome, turnHref } from './layout.js';

function select(name: keyof TurnFilter, label: string, values: string[], current: string | undefined) {
  return html`<label>${label}<select name="${name}"><option value="">any</option>${values.map((v) => html`<option value="${v}"${v === current ? html` selected` : ''}>${v}</option>`)}</select></label>`;
}

function outcomeCell(t: TurnSummary) {
  const o = t.outcome ?? UNFINISHED;
  const cls = o === 'answered' ? 'ok' : o === UNFINISHED ? 'warn' : 'bad';
  return html`<span class="${cls}">${o}</span>`;
}

function toolsCell(t: TurnSummary) {
  const counts = new Map<string, { n: number; failed: number }>();
  for (const c of t.toolCalls) {
    const x = counts.get(c.name) ?? counts.set(c.name, { n: 0, failed: 0 }).get(c.name)!;
    x.n++;
    if (!c.ok) x.failed++;
  }
  const tools = [...counts].map(([name, x], i) => html`${i ? ', ' : ''}${name}${x.n > 1 ? ` ×${x.n}` : ''}${x.failed ? html` <span class="bad">(${x.failed} failed)</span>` : ''}`);
  return t.subagents.length ? html`${tools}<div class="muted">sub-agents: ${t.subagents.join(', ')}</div>` : html`${tools}`;
}

/** Newest first, filterable, 50 a page. */
export function turnsPage(all: readonly TurnSummary[], page: TurnPage, filter: TurnFilter, chrome: PageChrome) {
  const choices = filterChoices(all);
  const body = html`<h1>Turns</h1>
<form class="filters" method="get" action="${BASE}/turns">
${select('platform', 'Platform', choices.platforms, filter.platform)}
<label>User<input name="user" value="${filter.user ?? ''}" placeholder="e.g. U0123"></label>
${select('outcome', 'Outcome', choices.outcomes, filter.outcome)}
${select('tool', 'Tool', choices.tools, filter.tool)}
<label>Text<input name="text" value="${filter.text ?? ''}" placeholder="words in the message"></label>
<button type="submit">Filter</button> <a href="${BASE}/turns">clear</a>
</form>
<p class="muted" id="turn-count">${page.total} turn${page.total === 1 ? '' : 's'}${page.total !== all.length ? ` of ${all.length}` : ''}</p>
<table id="turns"><thead><tr><th>Started (UTC)</th><th>Platform</th><th>User</th><th>Message</th><th>Outcome</th><th>Tools</th><th class="num">Steps</th><th class="num">Tokens in/out</th><th class="num">Duration</th></tr></thead>
<tbody>${page.turns.map(
    (t) => html`<tr><td><a href="${turnHref(t.turnId)}">${fmtTime(t.startedAt)}</a></td><td>${t.platform || '—'}</td><td>${t.userKey || '—'}</td><td><a href="${turnHref(t.turnId)}">${t.text || t.turnId}</a></td><td>${outcomeCell(t)}</td><td>${toolsCell(t)}</td><td class="num">${t.steps}</td><td class="num">${t.promptTokens} / ${t.completionTokens}</td><td class="num">${fmtMs(t.durationMs)}</td></tr>`,
  )}</tbody></table>
${page.total === 0 ? html`<p class="muted">No turns match.${all.length === 0 ? ' Traces appear here once the bot has answered someone.' : ''}</p>` : ''}
<div class="pager">${page.page > 1 ? html`<a href="${BASE}/turns${filterQuery(filter, page.page - 1)}" rel="prev">← newer</a>` : ''}<span>page ${page.page} of ${page.pages}</span>${page.page < page.pages ? html`<a href="${BASE}/turns${filterQuery(filter, page.page + 1)}" rel="next">older →</a>` : ''}</div>`;
  return layout('Turns', body, chrome);
}
