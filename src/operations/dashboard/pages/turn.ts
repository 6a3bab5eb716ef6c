import type { FeedbackVote } from '../../../state/feedback/feedback-store.js';
import { html, type Html } from '../html.js';
import type { TurnSummary } from '../turn-summaries.js';
import { BASE, fmtMs, fmtTime, layout, type PageChrome, turnHref } from './layout.js';

type Event = Record<string, unknown>;

const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v, null, 2));

/** Tool arguments are recorded parsed or as the model's raw JSON text: shown pretty either way. */
function pretty(v: unknown): string {
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return str(v);
}

function block(label: string, text: string, open = true): Html {
  if (text.length > 2000 || !open) return html`<details><summary>${label} (${text.length} chars)</summary><pre>${text}</pre></details>`;
  return html`<div class="muted">${label}</div><pre>${text}</pre>`;
}

interface SentMessage {
  role?: string;
  content?: unknown;
  toolCalls?: Array<{ name?: string; arguments?: string }>;
  name?: string;
}

function messageView(m: SentMessage): Html {
  const calls = (m.toolCalls ?? []).map((c) => `${c.name ?? '?'}(${c.arguments ?? ''})`).join('\n');
  return html`<div class="msg"><span class="role">${m.role ?? '?'}${m.name ? ` · ${m.name}` : ''}</span><pre>${str(m.content)}${calls ? `${m.content ? '\n' : ''}→ ${calls}` : ''}</pre></div>`;
}

function modelCall(e: Event): Html {
  const usage = e.usage as { promptTokens?: number; completionTokens?: number } | undefined;
  const messages = Array.isArray(e.messages) ? (e.messages as SentMessage[]) : [];
  const r = e.response as { content?: string | null; toolCalls?: Array<{ name: string; arguments: string }>; parseErrors?: string[]; finishReason?: string } | null | undefined;
  const tools = Array.isArray(e.tools) ? (e.tools as unknown[]).map(String) : [];
  return html`<div class="event model"><span class="title">Model call · step ${str(e.step)}</span><span class="meta">${str(e.model)}${typeof e.requestModel === 'string' && e.requestModel !== e.model ? ` (asked for ${e.requestModel})` : ''} · ${fmtMs(Number(e.latencyMs))} · ${usage ? `${usage.promptTokens ?? '?'} in / ${usage.completionTokens ?? '?'} out tokens` : 'no usage'}${tools.length ? ` · tools offered: ${tools.join(', ')}` : ''}</span>
<details><summary>${e.promptIncomplete === true ? `Prompt as sent: only the last ${messages.length} message${messages.length === 1 ? '' : 's'} (the trace line with the earlier ones is missing)` : `Prompt as sent (${messages.length} message${messages.length === 1 ? '' : 's'})`}</summary>${messages.map(messageView)}</details>
${e.error ? html`<div class="bad">Error: ${str(e.error)}</div>` : ''}
${r?.content ? block('Response', r.content) : ''}
${(r?.toolCalls ?? []).map((c) => html`<div>Requests <b>${c.name}</b></div><pre>${pretty(c.arguments)}</pre>`)}
${(r?.parseErrors ?? []).map((p) => html`<div class="bad">Could not parse a tool call: ${p}</div>`)}</div>`;
}

function toolCall(e: Event): Html {
  const ok = e.ok === true;
  return html`<div class="event tool${ok ? '' : ' failed'}" data-tool="${str(e.name)}"><span class="title">Tool call · ${str(e.name)}</span><span class="meta">${ok ? html`<span class="ok">ok</span>` : html`<span class="bad">failed${e.errorKind ? ` (${str(e.errorKind)})` : ''}</span>`} · ${fmtMs(Number(e.durationMs))}${typeof e.startedAt === 'number' ? ` · started ${new Date(e.startedAt).toISOString().slice(11, 23)}` : ''}${e.callId ? ` · call ${str(e.callId)}` : ''}</span>
${block('Arguments', pretty(e.args))}
${block('Result', str(e.result))}</div>`;
}

function approval(e: Event): Html {
  const status = str(e.status);
  return html`<div class="event approval"><span class="title">Approval · ${str(e.tool)}</span><span class="meta">${status}${e.by ? ` · decided by ${str(e.by)}` : ''} · ${str(e.approvalId)}</span></div>`;
}

function end(e: Event): Html {
  return html`<div class="event end"><span class="title">Turn ended · ${str(e.outcome)}</span><span class="meta">${str(e.steps)} steps · ${fmtMs(Number(e.durationMs))} · ${str(e.promptTokens)} in / ${str(e.completionTokens)} out tokens</span></div>`;
}

function start(e: Event): Html {
  return html`<div class="event"><span class="title">User message</span><span class="meta">${str(e.platform)} · ${str(e.userKey)} · session ${str(e.sessionId)}</span><pre>${str(e.text)}</pre></div>`;
}

/** One record as a timeline row: the time it was written on the left, the record on the right. */
function one(e: Event): Html {
  return html`<div class="step"><time>${typeof e.ts === 'string' ? e.ts.slice(11, 23) : ''}</time>${record(e)}</div>`;
}

function record(e: Event): Html {
  switch (e.type) {
    case 'turn_start':
      return start(e);
    case 'model_call':
      return modelCall(e);
    case 'tool_call':
      return toolCall(e);
    case 'approval':
      return approval(e);
    case 'turn_end':
      return end(e);
    default:
      return html`<div class="event"><span class="title">${str(e.type)}</span><pre>${JSON.stringify(e, null, 2)}</pre></div>`;
  }
}

/**
 * The timeline in written order. A sub-agent's model and tool calls carry `agent` and the parent's
 * `delegate` call id (`parentCallId`); they are written before that call's own record (which
 * comes once the sub-agent finished), and parallel runs interleave. So each run is gathered into
 * one nested block shown right under its delegate call, headed by the run's `subagent` summary;
 * a run whose delegate call has no record (the turn was cut short) stays where it began.
 */
export function timeline(events: Event[]): Html[] {
  const runKey = (e: Event) => (typeof e.agent === 'string' && e.agent ? (typeof e.parentCallId === 'string' ? e.parentCallId : `agent:${e.agent}`) : undefined);
  const runs = new Map<string, { agent: string; events: Event[]; summary?: Event }>();
  for (const e of events) {
    const key = e.type === 'subagent' && typeof e.callId === 'string' ? e.callId : runKey(e);
    if (key === undefined) continue;
    const run = runs.get(key) ?? runs.set(key, { agent: str(e.agent), events: [] }).get(key)!;
    if (e.type === 'subagent') run.summary = e;
    else run.events.push(e);
  }
  const delegated = new Set(events.flatMap((e) => (e.type === 'tool_call' && runKey(e) === undefined && typeof e.callId === 'string' && runs.has(e.callId) ? [e.callId] : [])));
  const shown = new Set<string>();
  const out: Html[] = [];
  const showRun = (key: string) => {
    if (shown.has(key)) return;
    shown.add(key);
    const run = runs.get(key)!;
    out.push(agentBlock(run.agent, run.events, run.summary));
  };
  for (const e of events) {
    if (e.type === 'subagent') {
      if (!delegated.has(String(e.callId))) showRun(String(e.callId));
      continue;
    }
    const key = runKey(e);
    if (key !== undefined) {
      if (!delegated.has(key)) showRun(key);
      continue;
    }
    out.push(one(e));
    if (e.type === 'tool_call' && delegated.has(String(e.callId))) showRun(String(e.callId));
  }
  return out;
}

function agentBlock(agent: string, events: Event[], summary: Event | undefined): Html {
  const tokens = { in: 0, out: 0 };
  for (const e of events) {
    const u = e.usage as { promptTokens?: number; completionTokens?: number } | undefined;
    tokens.in += u?.promptTokens ?? 0;
    tokens.out += u?.completionTokens ?? 0;
  }
  const facts = summary
    ? `${str(summary.outcome)} · ${str(summary.steps)} steps · ${fmtMs(Number(summary.durationMs))} · ${str(summary.promptTokens)} in / ${str(summary.completionTokens)} out tokens`
    : `${events.filter((e) => e.type === 'model_call').length} model calls · ${tokens.in} in / ${tokens.out} out tokens · not finished`;
  return html`<section class="agent" data-agent="${agent}"><div class="title">Sub-agent · ${agent}</div><span class="meta">${facts}</span>${events.map(one)}</section>`;
}

export interface ReplayForm {
  formToken?: string;
  defaultModel: string;
  /** Why the button is off (another replay runs, no model calls…), shown instead of it. */
  unavailable?: string;
}

export function turnPage(t: TurnSummary, events: Event[], chrome: PageChrome, replay: ReplayForm | undefined, votes?: FeedbackVote[] | 'unavailable') {
  const body = html`<p><a href="${BASE}/turns">← all turns</a></p>
<h1>Turn ${t.turnId}</h1>
<p class="muted">${fmtTime(t.startedAt)} UTC · ${t.platform || '?'} · ${t.userKey || '?'} · ${t.outcome ?? 'not finished'} · ${t.steps} steps · ${t.promptTokens} in / ${t.completionTokens} out tokens · ${fmtMs(t.durationMs)}</p>
${votesSection(votes)}
${replay ? replayForm(t, replay) : ''}
<div id="timeline">${timeline(events)}</div>`;
  return layout(`Turn ${t.turnId.slice(0, 8)}`, body, chrome);
}

/** Who voted how on this turn's answer (the latest vote of each person). */
function votesSection(votes: FeedbackVote[] | 'unavailable' | undefined): Html | string {
  if (votes === undefined) return '';
  if (votes === 'unavailable') return html`<p id="feedback" class="muted">Feedback: the votes could not be read.</p>`;
  if (votes.length === 0) return html`<p id="feedback" class="muted">Feedback: no votes.</p>`;
  const up = votes.filter((v) => v.vote === 'up').length;
  return html`<div id="feedback"><h2>Feedback: ${up} 👍 · ${votes.length - up} 👎</h2><table><thead><tr><th>Voter</th><th>Vote</th><th>When (UTC)</th></tr></thead><tbody>
${votes.map((v) => html`<tr><td>${v.voter}</td><td>${v.vote === 'up' ? '👍 up' : '👎 down'}</td><td>${fmtTime(v.votedAt)}</td></tr>`)}
</tbody></table></div>`;
}

function replayForm(t: TurnSummary, r: ReplayForm): Html {
  if (r.unavailable) return html`<p class="muted">Replay: ${r.unavailable}</p>`;
  return html`<form class="filters" method="post" action="${turnHref(t.turnId)}/replay">
<input type="hidden" name="form_token" value="${r.formToken ?? ''}">
<label>Replay this turn against model<input name="model" value="${r.defaultModel}" required maxlength="100"></label>
<button type="submit" id="replay">Replay</button></form>`;
}
