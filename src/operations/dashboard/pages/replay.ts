import { html, type Html } from '../html.js';
import type { Decision } from '../../eval/replay.js';
import type { ReplayRun } from '../replay-runner.js';
import { fmtMs, layout, notice, type PageChrome, turnHref } from './layout.js';

function decision(d: Decision): Html {
  if (d.error) return html`<div class="bad">error: ${d.error}</div>`;
  if (d.calls.length === 0) return html`<div class="muted">answer</div><pre>${d.text ?? ''}</pre>`;
  return html`${d.calls.map((c) => html`<div>calls <b>${c.name}</b></div><pre>${c.args}</pre>`)}${d.text ? html`<pre>${d.text}</pre>` : ''}`;
}

/** Recorded on the left, the replay on the right, a verdict per step. */
export function replayPage(run: ReplayRun, chrome: PageChrome) {
  const differ = run.steps.filter((s) => !s.samePath).length;
  const body = html`<p><a href="${turnHref(run.turnId)}">← back to the turn</a></p>
<h1>Replay of turn ${run.turnId}</h1>
<p class="muted">recorded with ${run.recordedModel || '?'} · replayed with ${run.model} · ${run.steps.length} step(s) in ${fmtMs(run.finishedAt - run.startedAt)} · tool-call path differs in ${differ}</p>
${run.error ? notice(run.error, 'error') : ''}
<table id="replay"><thead><tr><th>Step</th><th>Recorded (${run.recordedModel || '?'})</th><th>Replay (${run.model})</th><th>Verdict</th></tr></thead><tbody>
${run.steps.map(
    (s) => html`<tr><td>${s.step}</td><td>${decision(s.recorded)}</td><td>${decision(s.replayed)}</td><td class="${s.samePath ? (s.argsDiffer ? 'warn' : 'ok') : 'bad'}">${s.samePath ? (s.argsDiffer ? 'same tools, other arguments' : 'same') : 'different path'}${s.missingTools.length ? html`<div class="muted">not offered here: ${s.missingTools.join(', ')}</div>` : ''}</td></tr>`,
  )}</tbody></table>`;
  return layout('Replay', body, chrome);
}
