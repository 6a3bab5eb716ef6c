import { percentile } from '../../basics/percentile.js';
import type { RefusalSummary, TurnSummary } from './turn-summaries.js';

/** Filters, pages and numbers over the index: pure functions, so pages and tests share them. */

export interface TurnFilter {
  platform?: string;
  /** Substring of the speaker key (platform:workspace:user). */
  user?: string;
  /** An outcome, or `unfinished` for turns without a turn_end yet. */
  outcome?: string;
  tool?: string;
  /** Case-insensitive substring of the user's message. */
  text?: string;
}

export const UNFINISHED = 'unfinished';
export const PAGE_SIZE = 50;
const FILTER_KEYS = ['platform', 'user', 'outcome', 'tool', 'text'] as const;

export function parseFilter(q: URLSearchParams): TurnFilter {
  const f: TurnFilter = {};
  for (const k of FILTER_KEYS) {
    const v = q.get(k)?.trim().slice(0, 200);
    if (v) f[k] = v;
  }
  return f;
}

export function filterQuery(f: TurnFilter, page?: number): string {
  const q = new URLSearchParams();
  for (const k of FILTER_KEYS) if (f[k]) q.set(k, f[k]!);
  if (page && page > 1) q.set('page', String(page));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function matches(t: TurnSummary, f: TurnFilter): boolean {
  if (f.platform && t.platform !== f.platform) return false;
  if (f.user && !t.userKey.toLowerCase().includes(f.user.toLowerCase())) return false;
  if (f.outcome && (t.outcome ?? UNFINISHED) !== f.outcome) return false;
  if (f.tool && !t.toolCalls.some((c) => c.name === f.tool)) return false;
  if (f.text && !t.search.includes(f.text.toLowerCase())) return false;
  return true;
}

export interface TurnPage {
  total: number;
  page: number;
  pages: number;
  turns: TurnSummary[];
}

/** `turns` newest first; page numbers start at 1 and are clamped into range. */
export function pageOf(turns: readonly TurnSummary[], f: TurnFilter, page: number, size = PAGE_SIZE): TurnPage {
  const hits = turns.filter((t) => matches(t, f));
  const pages = Math.max(1, Math.ceil(hits.length / size));
  const p = Math.min(Math.max(1, Math.floor(page) || 1), pages);
  return { total: hits.length, page: p, pages, turns: hits.slice((p - 1) * size, p * size) };
}

/** The values the filter menus offer. */
export function filterChoices(turns: readonly TurnSummary[]): { platforms: string[]; outcomes: string[]; tools: string[] } {
  const platforms = new Set<string>();
  const outcomes = new Set<string>();
  const tools = new Set<string>();
  for (const t of turns) {
    if (t.platform) platforms.add(t.platform);
    outcomes.add(t.outcome ?? UNFINISHED);
    for (const c of t.toolCalls) tools.add(c.name);
  }
  return { platforms: [...platforms].sort(), outcomes: [...outcomes].sort(), tools: [...tools].sort() };
}

export interface ToolStats {
  name: string;
  calls: number;
  ok: number;
  successRate: number;
  p50Ms: number;
  p95Ms: number;
  errorKinds: Record<string, number>;
}

export interface DayStats {
  /** YYYY-MM-DD (UTC) */
  day: string;
  outcomes: Record<string, number>;
  promptTokens: number;
  completionTokens: number;
}

export interface DashboardStats {
  turns: number;
  tools: ToolStats[];
  days: DayStats[];
  outcomes: string[];
  refusals: Record<string, number>;
}


const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Turns started in [since, until]: per-tool numbers, and outcomes and tokens per UTC day (every day listed). */
export function computeStats(turns: readonly TurnSummary[], refusals: readonly RefusalSummary[], since: number, until: number): DashboardStats {
  const durations = new Map<string, number[]>();
  const ok = new Map<string, number>();
  const kinds = new Map<string, Record<string, number>>();
  const days = new Map<string, DayStats>();
  const outcomes = new Set<string>();
  for (let d = Date.parse(`${dayOf(since)}T00:00:00Z`), n = 0; d <= until && n < 3700; d += 86_400_000, n++) {
    days.set(dayOf(d), { day: dayOf(d), outcomes: {}, promptTokens: 0, completionTokens: 0 });
  }
  let count = 0;
  for (const t of turns) {
    if (t.startedAt < since || t.startedAt > until) continue;
    count++;
    const day = days.get(dayOf(t.startedAt));
    const outcome = t.outcome ?? UNFINISHED;
    outcomes.add(outcome);
    if (day) {
      day.outcomes[outcome] = (day.outcomes[outcome] ?? 0) + 1;
      day.promptTokens += t.promptTokens;
      day.completionTokens += t.completionTokens;
    }
    for (const c of t.toolCalls) {
      (durations.get(c.name) ?? durations.set(c.name, []).get(c.name)!).push(c.durationMs);
      if (c.ok) ok.set(c.name, (ok.get(c.name) ?? 0) + 1);
      else {
        const k = kinds.get(c.name) ?? kinds.set(c.name, {}).get(c.name)!;
        const kind = c.errorKind ?? 'failed';
        k[kind] = (k[kind] ?? 0) + 1;
      }
    }
  }
  const tools: ToolStats[] = [...durations].map(([name, ds]) => {
    ds.sort((a, b) => a - b);
    const good = ok.get(name) ?? 0;
    return { name, calls: ds.length, ok: good, successRate: good / ds.length, p50Ms: percentile(ds, 50), p95Ms: percentile(ds, 95), errorKinds: kinds.get(name) ?? {} };
  });
  tools.sort((a, b) => b.calls - a.calls || a.name.localeCompare(b.name));
  const refused: Record<string, number> = {};
  for (const r of refusals) if (r.at >= since && r.at <= until) refused[r.reason] = (refused[r.reason] ?? 0) + 1;
  return { turns: count, tools, days: [...days.values()], outcomes: [...outcomes].sort(), refusals: refused };
}
