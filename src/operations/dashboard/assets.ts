import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/**
 * Static files of the dashboard. uPlot comes from node_modules (no CDN: the bot may run with no
 * network); the stylesheet and the chart starter are ours, kept here as text so a compiled build
 * needs no extra files. Pages load scripts only from here (the Content-Security-Policy allows
 * 'self' and nothing inline), so chart data travels in JSON blocks, never as script.
 */

const CSS = `
:root { --fg:#1d2330; --muted:#5b6478; --line:#dde1ea; --bg:#f7f8fb; --ok:#16794a; --bad:#b42318; --warn:#9a6700; --accent:#2f5bd3; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; gap:18px; align-items:center; padding:10px 20px; background:#fff; border-bottom:1px solid var(--line); }
header .brand { font-weight:700; }
header nav a { margin-right:14px; color:var(--accent); text-decoration:none; }
header form { margin-left:auto; }
main { padding:18px 20px; max-width:1400px; }
h1 { font-size:20px; margin:0 0 12px; } h2 { font-size:16px; margin:22px 0 8px; }
table { border-collapse:collapse; width:100%; background:#fff; border:1px solid var(--line); }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#eef1f6; font-weight:600; } td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
#turns td:first-child { white-space:nowrap; }
a { color:var(--accent); }
.muted { color:var(--muted); } .ok { color:var(--ok); } .bad { color:var(--bad); } .warn { color:var(--warn); }
.filters { display:flex; flex-wrap:wrap; gap:8px; align-items:end; margin-bottom:12px; }
.filters label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); }
.filters input, .filters select, .filters button { height:30px; }
input, select, button { font:inherit; padding:4px 6px; }
button { cursor:pointer; }
pre { white-space:pre-wrap; word-break:break-word; background:#fff; border:1px solid var(--line); padding:8px; margin:4px 0; max-height:480px; overflow:auto; }
.event { background:#fff; border:1px solid var(--line); border-left:4px solid var(--line); padding:8px 12px; margin:8px 0; }
.event.model { border-left-color:var(--accent); } .event.tool { border-left-color:var(--ok); } .event.tool.failed { border-left-color:var(--bad); }
.event.approval { border-left-color:var(--warn); } .event.end { border-left-color:var(--muted); }
.event .title { font-weight:600; } .event .meta { color:var(--muted); font-size:12px; margin-left:8px; }
.step { display:grid; grid-template-columns:92px minmax(0, 1fr); column-gap:10px; align-items:start; }
.step > time { color:var(--muted); font-size:12px; padding-top:17px; font-variant-numeric:tabular-nums; }
.agent { border:1px dashed var(--muted); padding:6px 12px; margin:10px 0 10px 102px; background:#fbfbfe; }
.agent > .title { font-weight:700; }
.msg .role { font-size:12px; font-weight:600; color:var(--muted); text-transform:uppercase; }
.pager { margin:10px 0; display:flex; gap:12px; align-items:center; }
.side { display:grid; grid-template-columns:1fr 1fr; gap:12px; }
.login { max-width:380px; margin:12vh auto; background:#fff; border:1px solid var(--line); padding:24px; }
.login input { width:100%; margin:8px 0 12px; }
.notice { padding:8px 12px; border:1px solid var(--line); background:#fff; margin:8px 0; }
.notice.error { border-color:var(--bad); color:var(--bad); }
.chart { background:#fff; border:1px solid var(--line); padding:8px; margin:8px 0; min-height:60px; }
`;

/** Draws every `<div data-chart="id">` from the JSON block `id`: {title, x: epoch s[], series: [{label, values}]}. */
const CHARTS = `
(function () {
  var colors = ['#2f5bd3', '#16794a', '#b42318', '#9a6700', '#7a3fd1', '#0f7c8c', '#5b6478'];
  document.querySelectorAll('[data-chart]').forEach(function (el) {
    var block = document.getElementById(el.getAttribute('data-chart'));
    if (!block || typeof uPlot === 'undefined') return;
    var spec = JSON.parse(block.textContent);
    var series = [{}].concat(spec.series.map(function (s, i) { return { label: s.label, stroke: colors[i % colors.length], width: 2 }; }));
    var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
    el.textContent = '';
    // One point per UTC day: ticks on whole days only, labelled as dates (never "4pm").
    var x = { incrs: [86400, 7 * 86400, 30 * 86400], values: '{M}/{D}' };
    new uPlot({ title: spec.title, width: Math.max(320, el.clientWidth - 16), height: 240, series: series, scales: { x: { time: true } }, axes: [x, {}] }, data, el);
  });
})();
`;

export interface Asset {
  type: string;
  body: string | Buffer;
}

const require = createRequire(import.meta.url);
const cache = new Map<string, Asset>();

async function fromUplot(file: string, type: string): Promise<Asset> {
  return { type, body: await readFile(require.resolve(`uplot/dist/${file}`)) };
}

/** The asset for a name under /dashboard/assets/, or undefined. */
export async function asset(name: string): Promise<Asset | undefined> {
  const hit = cache.get(name);
  if (hit) return hit;
  let a: Asset | undefined;
  if (name === 'dashboard.css') a = { type: 'text/css; charset=utf-8', body: CSS };
  else if (name === 'charts.js') a = { type: 'text/javascript; charset=utf-8', body: CHARTS };
  else if (name === 'uplot.js') a = await fromUplot('uPlot.iife.min.js', 'text/javascript; charset=utf-8');
  else if (name === 'uplot.css') a = await fromUplot('uPlot.min.css', 'text/css; charset=utf-8');
  if (a) cache.set(name, a);
  return a;
}
