import { html } from '../html.js';
import { AUDIT_KINDS, type AuditPage } from '../../../state/audit/audit-log.js';
import { AUDIT_PAGE_SIZE, auditQueryString, type AuditQuery } from '../audit-query.js';
import { BASE, fmtTime, layout, notice, type PageChrome } from './layout.js';

const detailText = (d: Record<string, unknown>) => (Object.keys(d).length ? JSON.stringify(d) : '');

/** Newest first, filterable, 50 a page, with the same filters as a CSV download. */
export function auditPage(result: AuditPage, q: AuditQuery, chrome: PageChrome) {
  const pages = Math.max(1, Math.ceil(result.total / AUDIT_PAGE_SIZE));
  const f = q.filter;
  const body = html`<h1>Audit</h1>
${q.problems.map((p) => notice(p, 'error'))}
<form class="filters" method="get" action="${BASE}/audit" id="audit-filters">
<label>Kind<select name="kind"><option value="">any</option>${AUDIT_KINDS.map((k) => html`<option value="${k}"${k === f.kind ? html` selected` : ''}>${k}</option>`)}</select></label>
<label>Actor<input name="actor" value="${f.actor ?? ''}" placeholder="e.g. slack:U0123"></label>
<label>Channel<input name="channel" value="${f.channel ?? ''}" placeholder="e.g. slack:C0123"></label>
<label>From<input type="date" name="from" value="${q.fromDay ?? ''}"></label>
<label>To<input type="date" name="to" value="${q.toDay ?? ''}"></label>
<button type="submit">Filter</button> <a href="${BASE}/audit">clear</a>
</form>
<p class="muted"><span id="audit-count">${result.total} event${result.total === 1 ? '' : 's'}</span> · <a id="audit-csv" href="${BASE}/audit.csv${auditQueryString(q)}" download>Download CSV</a> (these filters, every page)</p>
<table id="audit"><thead><tr><th>Time (UTC)</th><th>Kind</th><th>Actor</th><th>Channel</th><th>Tool</th><th>Outcome</th><th>Args hash</th><th>Detail</th></tr></thead>
<tbody>${result.entries.map(
    (e) => html`<tr data-id="${e.id}"><td>${fmtTime(e.at)}</td><td>${e.kind}</td><td>${e.actor ?? '—'}</td><td>${e.channel ?? '—'}</td><td>${e.tool ?? '—'}</td><td>${e.outcome}</td><td title="${e.argsHash ?? ''}">${e.argsHash ? `${e.argsHash.slice(0, 12)}…` : '—'}</td><td class="muted">${detailText(e.detail)}</td></tr>`,
  )}</tbody></table>
${result.total === 0 ? html`<p class="muted">No events match.</p>` : ''}
<div class="pager">${q.page > 1 ? html`<a href="${BASE}/audit${auditQueryString(q, q.page - 1)}" rel="prev">← newer</a>` : ''}<span>page ${q.page} of ${pages}</span>${q.page < pages ? html`<a href="${BASE}/audit${auditQueryString(q, q.page + 1)}" rel="next">older →</a>` : ''}</div>`;
  return layout('Audit', body, chrome);
}
