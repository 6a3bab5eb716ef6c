import { html, type Html } from '../html.js';
import { BASE } from '../dashboard-route.js';

export { BASE };

export interface PageChrome {
  /** Present for a browser session: the sign-out form needs its form token. */
  formToken?: string;
  /** Signed in (cookie or bearer): shows the navigation. */
  signedIn: boolean;
  charts?: boolean;
}

/** The page shell: navigation, stylesheet, and (for chart pages) uPlot and the chart starter. */
export function layout(title: string, body: Html, chrome: PageChrome): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · hermes</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="${BASE}/assets/dashboard.css">${chrome.charts ? html`<link rel="stylesheet" href="${BASE}/assets/uplot.css">` : ''}
</head><body>
<header><span class="brand">hermes</span>${chrome.signedIn
    ? html`<nav><a href="${BASE}/turns">Turns</a><a href="${BASE}/stats">Stats</a><a href="${BASE}/evals">Eval runs</a><a href="${BASE}/audit">Audit</a></nav>${chrome.formToken !== undefined
        ? html`<form method="post" action="${BASE}/logout"><input type="hidden" name="form_token" value="${chrome.formToken}"><button type="submit">Sign out</button></form>`
        : ''}`
    : ''}</header>
<main>${body}</main>
${chrome.charts ? html`<script src="${BASE}/assets/uplot.js"></script><script src="${BASE}/assets/charts.js"></script>` : ''}
</body></html>`;
}

export function notice(text: string, kind: 'error' | 'info' = 'info'): Html {
  return html`<div class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</div>`;
}

export const fmtTime = (ms: number) => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '—');
export const fmtMs = (ms: number | undefined) => (ms === undefined ? '—' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);
export const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
export const turnHref = (turnId: string) => `${BASE}/turns/${encodeURIComponent(turnId)}`;
