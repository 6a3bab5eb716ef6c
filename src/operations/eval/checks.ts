import type { Expectations, ExpectedCall } from './case-schema.js';
import type { SinkRequest } from './fixture-web.js';

/** What one case left behind: the only input the checks see (pure functions, no I/O). */
export interface CaseObservation {
  /** Every text the bot sent during the case, in order. */
  answers: string[];
  /** The last text sent in answer to the last message ('' when none). */
  finalAnswer: string;
  toolCalls: Array<{ name: string; args: unknown; ok: boolean }>;
  /** Decided approvals from the trace. */
  approvals: Array<{ tool: string; status: string }>;
  sink: SinkRequest[];
  /** The speaking user's stored facts (text). */
  facts: string[];
  /** Model calls over the whole case. */
  steps: number;
}

export interface CheckResult {
  check: string;
  ok: boolean;
  detail: string;
}

const norm = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();
const has = (text: string, word: string) => norm(text).includes(norm(word));

/** A string written as /pattern/flags is a regular expression. */
function asRegex(s: string): RegExp | undefined {
  const m = /^\/(.+)\/([a-z]*)$/s.exec(s);
  if (!m) return undefined;
  try {
    return new RegExp(m[1]!, m[2]);
  } catch {
    return undefined;
  }
}

/**
 * Does `actual` contain `expected`? Objects: every expected key matches; arrays: each expected
 * element matches the element at the same index; strings: equal ignoring case and spacing, or a
 * /regex/; a number also matches its string spelling (models send "3" for 3).
 */
export function matchesSubset(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'string') {
    const re = asRegex(expected);
    const text = typeof actual === 'string' ? actual : typeof actual === 'number' || typeof actual === 'boolean' ? String(actual) : JSON.stringify(actual ?? '');
    return re ? re.test(text) : norm(text) === norm(expected);
  }
  if (typeof expected === 'number' || typeof expected === 'boolean') return actual === expected || String(actual) === String(expected);
  if (expected === null) return actual === null || actual === undefined;
  if (Array.isArray(expected)) return Array.isArray(actual) && expected.every((e, i) => matchesSubset(e, actual[i]));
  if (typeof expected === 'object') {
    if (!actual || typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(expected as Record<string, unknown>).every(([k, v]) => matchesSubset(v, (actual as Record<string, unknown>)[k]));
  }
  return false;
}

const callMatches = (want: ExpectedCall, got: CaseObservation['toolCalls'][number]) =>
  got.name === want.name && (want.ok === undefined || want.ok === got.ok) && (!want.args || matchesSubset(want.args, got.args));

/**
 * Pairs expected calls with distinct actual calls (in order when asked). Returns how many matched
 * and the first that did not.
 */
export function matchToolCalls(expected: ExpectedCall[], actual: CaseObservation['toolCalls'], inOrder: boolean): { matched: number; missing: ExpectedCall[] } {
  const used = new Set<number>();
  let from = 0;
  let matched = 0;
  const missing: ExpectedCall[] = [];
  for (const want of expected) {
    let found = -1;
    for (let i = inOrder ? from : 0; i < actual.length; i++) {
      if (!used.has(i) && callMatches(want, actual[i]!)) {
        found = i;
        break;
      }
    }
    if (found < 0) missing.push(want);
    else {
      used.add(found);
      matched++;
      from = found + 1;
    }
  }
  return { matched, missing };
}

/** Times, dates, weekdays and prices as answers state them. */
const REALTIME_PATTERNS: RegExp[] = [
  /\b\d{1,2}:\d{2}\b/,
  /\b\d{1,2}\s?(am|pm)\b/i,
  /\b(noon|midnight)\b/i,
  /\b\d{4}-\d{2}-\d{2}\b/,
  /\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(tember)?|oct(ober)?|nov(ember)?|dec(ember)?)\.? \d{1,2}\b/i,
  /\b\d{1,2} (january|february|march|april|may|june|july|august|september|october|november|december)\b/i,
  /\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b/i,
  /[$€£¥]\s?\d/,
  /\b\d+(\.\d+)?\s?(usd|eur|gbp|dollars?|euros?)\b/i,
];

export function realtimeClaim(text: string): string | undefined {
  for (const re of REALTIME_PATTERNS) {
    const m = re.exec(text);
    if (m) return m[0];
  }
  return undefined;
}

const short = (v: unknown) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 160 ? `${s.slice(0, 160)}…` : s;
};

/** Every expectation of a case, checked against what happened. A case passes when all are ok. */
export function runChecks(expect: Expectations, obs: CaseObservation): CheckResult[] {
  const out: CheckResult[] = [];
  const add = (check: string, ok: boolean, detail: string) => out.push({ check, ok, detail });
  const made = obs.toolCalls.map((c) => `${c.name}${c.ok ? '' : '(failed)'}`).join(', ') || 'none';

  if (expect.tools_called?.length) {
    const { missing } = matchToolCalls(expect.tools_called, obs.toolCalls, expect.tools_in_order ?? false);
    add('tools_called', missing.length === 0, missing.length ? `missing ${missing.map((m) => `${m.name}${m.args ? ` ${short(m.args)}` : ''}`).join('; ')}; calls made: ${made}` : `all ${expect.tools_called.length} expected calls made`);
  }
  for (const name of expect.tools_not_called ?? []) {
    const n = obs.toolCalls.filter((c) => c.name === name).length + obs.approvals.filter((a) => a.tool === name).length;
    add(`tools_not_called:${name}`, n === 0, n ? `${name} was called ${n} time(s)` : `${name} not called`);
  }
  if (expect.sink) {
    const s = expect.sink;
    const hits = obs.sink.filter((r) => !s.method || r.method === s.method);
    if (s.count !== undefined) add('sink.count', hits.length === s.count, `sink received ${hits.length}, expected ${s.count}`);
    if (s.body !== undefined) {
      const want = s.body;
      const ok = hits.some((r) => (typeof want === 'string' ? has(r.body, want) : matchesSubset(want, parseBody(r))));
      add('sink.body', ok, ok ? 'a request matched the body' : `no request body matched ${short(want)}; got ${hits.map((r) => short(r.body)).join(' | ') || 'nothing'}`);
    }
  }
  if (expect.facts) {
    const f = expect.facts;
    const all = obs.facts.join('\n');
    for (const w of f.contains ?? []) add(`facts.contains:${w}`, has(all, w), has(all, w) ? 'stored' : `no stored fact mentions "${w}"; facts: ${short(obs.facts)}`);
    for (const w of f.none ?? []) add(`facts.none:${w}`, !has(all, w), has(all, w) ? `a stored fact mentions "${w}"` : 'not stored');
    if (f.count !== undefined) add('facts.count', obs.facts.length === f.count, `${obs.facts.length} facts stored, expected ${f.count}`);
  }
  if (expect.answer) {
    const a = expect.answer;
    const final = obs.finalAnswer;
    if (a.any) {
      const ok = a.any.some((w) => has(final, w));
      add('answer.any', ok, ok ? 'found' : `final answer has none of ${a.any.join(', ')}: ${short(final)}`);
    }
    for (const w of a.all ?? []) add(`answer.all:${w}`, has(final, w), has(final, w) ? 'found' : `final answer lacks "${w}": ${short(final)}`);
    for (const w of a.none ?? []) {
      const bad = obs.answers.find((t) => has(t, w));
      add(`answer.none:${w}`, bad === undefined, bad === undefined ? 'absent' : `the bot said "${w}": ${short(bad)}`);
    }
  }
  if (expect.max_steps !== undefined) add('max_steps', obs.steps <= expect.max_steps, `${obs.steps} model calls, limit ${expect.max_steps}`);
  if (expect.no_realtime_claim_without_tool) {
    const claim = realtimeClaim(obs.finalAnswer);
    const backed = obs.toolCalls.some((c) => c.ok);
    add('no_realtime_claim_without_tool', !claim || backed, claim && !backed ? `answer states "${claim}" but no tool call succeeded` : claim ? `"${claim}" is backed by a tool call` : 'no real-time claim');
  }
  for (const want of expect.approvals ?? []) {
    const ok = obs.approvals.some((a) => a.tool === want.tool && a.status === want.outcome);
    add(`approvals:${want.tool}:${want.outcome}`, ok, ok ? 'seen' : `approvals seen: ${obs.approvals.map((a) => `${a.tool} ${a.status}`).join(', ') || 'none'}`);
  }
  return out;
}

/** A sink body as an object when it is JSON or a form, else the text. */
function parseBody(r: { body: string; contentType: string }): unknown {
  try {
    return JSON.parse(r.body) as unknown;
  } catch {
    if (r.contentType.includes('form')) return Object.fromEntries(new URLSearchParams(r.body));
    return r.body;
  }
}

/** Tool-call accuracy: expected calls matched / calls made (1 when none expected and none made). */
export function toolAccuracy(expected: ExpectedCall[] | undefined, actual: CaseObservation['toolCalls'], inOrder: boolean): number {
  const want = expected ?? [];
  if (actual.length === 0) return want.length === 0 ? 1 : 0;
  return matchToolCalls(want, actual, inOrder).matched / actual.length;
}
