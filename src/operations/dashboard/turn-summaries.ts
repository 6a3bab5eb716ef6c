import { isSummaryRecord } from './summary-records.js';

/**
 * The dashboard's summary of each turn, built line by line as trace-index.ts reads the trace files.
 * Per turn it keeps only what lists, filters and stats need, plus where its lines are, so one
 * turn's page reads just those byte ranges: no parsed record is held, the byte ranges are numbers
 * in one flat array, and the values many turns share (platform, user, session, outcome, tool names)
 * are one string each. model_call lines (whole prompts, the bulk of the bytes) are recognised from
 * their first bytes, without decoding them, and never parsed here.
 */

export interface ToolCallSummary {
  name: string;
  ok: boolean;
  durationMs: number;
  errorKind?: string;
  agent?: string;
}

export interface TurnSummary {
  turnId: string;
  /** Epoch ms of the first line seen for the turn (its turn_start unless that day was pruned). */
  startedAt: number;
  platform: string;
  userKey: string;
  sessionId: string;
  /** The user's message, clipped for the list. */
  text: string;
  /** Lower-cased message text the text filter searches (first SEARCH_CHARS characters). */
  search: string;
  /** undefined while the turn has not ended (running, or paused for an approval). */
  outcome?: string;
  steps: number;
  durationMs?: number;
  promptTokens: number;
  completionTokens: number;
  modelCalls: number;
  toolCalls: ToolCallSummary[];
  approvals: number;
  /** Names of the sub-agents whose runs ended in this turn (one entry per run). */
  subagents: string[];
  /**
   * Where this turn's lines are, oldest first: three numbers per line (the file's number in the
   * index, the byte offset, the length). Only readEvents reads them.
   */
  lines: number[];
}

export interface RefusalSummary {
  at: number;
  reason: string;
  platform: string;
}

const TEXT_CHARS = 300;
const SEARCH_CHARS = 2000;
/**
 * `{"ts":"2026-12-01T09:00:00.000Z","type":"…","turnId":"…"` — the tracer writes these three keys
 * first, `ts` as toISOString() (24 characters). A line that starts otherwise takes the slow path:
 * parsed whole.
 */
const TS_AT = 7;
const TS_END = TS_AT + 24;
const TYPE_MARK = Buffer.from('{"ts":"');
const AFTER_TS = Buffer.from('","type":"');
const TYPE_AT = TS_END + AFTER_TS.length;
const MODEL_CALL = Buffer.from('model_call","turnId":"');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** turnIds are short; a longer one takes the slow path. */
const MAX_ID = 200;

/**
 * The list's message: cut before the word that crosses the limit. Cut inside a word, the first
 * half of a pasted key would match no secret shape when the page redacts it, and be shown.
 */
function clip(text: string): string {
  if (text.length <= TEXT_CHARS) return text;
  return `${text.slice(0, TEXT_CHARS + 1).replace(/\S*$/, '').trimEnd()}…`;
}

/** Whether buf[at..] holds `what`. */
function bytesAt(buf: Buffer, at: number, end: number, what: Buffer): boolean {
  if (at + what.length > end) return false;
  for (let i = 0; i < what.length; i++) if (buf[at + i] !== what[i]) return false;
  return true;
}

/** End of the JSON string whose content starts at `from` (its closing quote), or -1 if it has escapes or runs past `limit`. */
function stringEnd(buf: Buffer, from: number, limit: number): number {
  for (let i = from; i < limit; i++) {
    const c = buf[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH) return -1;
  }
  return -1;
}

export interface TurnSummaries {
  /** One complete line, buf[start, end) without its newline, which starts at byte `offset` of file `fileNo`. */
  line(buf: Buffer, start: number, end: number, fileNo: number, offset: number): void;
  /** Every turn, newest first. */
  turns(): readonly TurnSummary[];
  turn(turnId: string): TurnSummary | undefined;
  refusals(): readonly RefusalSummary[];
  /** Complete lines that were not JSON (skipped). */
  malformedLines(): number;
}

export function createTurnSummaries(): TurnSummaries {
  const byId = new Map<string, TurnSummary>();
  const refusals: RefusalSummary[] = [];
  let sorted: TurnSummary[] = [];
  let dirty = false;
  let malformedLines = 0;
  /** One copy of each value many turns share (platform, user, session, outcome, tool and agent names). */
  const shared = new Map<string, string>();

  function one(value: string): string {
    const known = shared.get(value);
    if (known !== undefined) return known;
    shared.set(value, value);
    return value;
  }

  function turnFor(turnId: string, ts: string): TurnSummary {
    let t = byId.get(turnId);
    if (!t) {
      t = { turnId, startedAt: Date.parse(ts) || 0, platform: '', userKey: '', sessionId: '', text: '', search: '', steps: 0, promptTokens: 0, completionTokens: 0, modelCalls: 0, toolCalls: [], approvals: 0, subagents: [], lines: [] };
      byId.set(turnId, t);
      dirty = true;
    }
    return t;
  }

  /**
   * Every line of a turn is kept for its page (a record type this build does not know too); the
   * summary reads only records that match trace-schema.ts (isSummaryRecord).
   */
  function take(raw: Record<string, unknown>, fileNo: number, offset: number, length: number): void {
    const ts = typeof raw.ts === 'string' ? raw.ts : undefined;
    if (raw.type === 'refusal' && raw.turnId === undefined) {
      if (ts !== undefined && isSummaryRecord('refusal', raw)) refusals.push({ at: Date.parse(ts) || 0, reason: one(raw.reason), platform: one(raw.platform) });
      return;
    }
    if (typeof raw.turnId !== 'string' || !raw.turnId) return;
    const t = turnFor(raw.turnId, String(raw.ts));
    t.lines.push(fileNo, offset, length);
    if (ts === undefined) return;
    if (isSummaryRecord('turn_start', raw)) {
      const { text } = raw;
      t.startedAt = Date.parse(ts) || 0;
      t.platform = one(raw.platform);
      t.userKey = one(raw.userKey);
      t.sessionId = one(raw.sessionId);
      t.text = clip(text);
      const search = text.slice(0, SEARCH_CHARS).toLowerCase();
      t.search = search === t.text ? t.text : search;
      dirty = true;
    } else if (isSummaryRecord('tool_call', raw)) {
      const call: ToolCallSummary = { name: one(raw.name), ok: raw.ok, durationMs: raw.durationMs };
      if (raw.errorKind !== undefined) call.errorKind = one(raw.errorKind);
      if (raw.agent !== undefined) call.agent = one(raw.agent);
      t.toolCalls.push(call);
    } else if (isSummaryRecord('approval', raw)) {
      if (raw.status === 'pending') t.approvals++;
    } else if (isSummaryRecord('subagent', raw)) {
      t.subagents.push(one(raw.agent));
    } else if (isSummaryRecord('turn_end', raw)) {
      t.outcome = one(raw.outcome);
      t.steps = raw.steps;
      t.durationMs = raw.durationMs;
      t.promptTokens = raw.promptTokens;
      t.completionTokens = raw.completionTokens;
    } else if (isSummaryRecord('refusal', raw)) {
      refusals.push({ at: Date.parse(ts) || 0, reason: one(raw.reason), platform: one(raw.platform) });
    }
  }

  /**
   * A model_call line in the tracer's shape is counted from its first bytes: the turn id is the
   * only part decoded. Any other line is parsed.
   */
  function line(buf: Buffer, start: number, end: number, fileNo: number, offset: number): void {
    if (end <= start) return;
    if (bytesAt(buf, start, end, TYPE_MARK) && bytesAt(buf, start + TS_END, end, AFTER_TS) && bytesAt(buf, start + TYPE_AT, end, MODEL_CALL)) {
      const idAt = start + TYPE_AT + MODEL_CALL.length;
      const idEnd = stringEnd(buf, idAt, Math.min(end, idAt + MAX_ID));
      if (idEnd > idAt) {
        const turnId = buf.toString('utf8', idAt, idEnd);
        const t = byId.get(turnId) ?? turnFor(turnId, buf.toString('latin1', start + TS_AT, start + TS_END));
        t.lines.push(fileNo, offset, end - start);
        t.modelCalls++;
        return;
      }
    }
    let e: unknown;
    try {
      e = JSON.parse(buf.toString('utf8', start, end));
    } catch {
      malformedLines++;
      return;
    }
    if (e && typeof e === 'object' && !Array.isArray(e)) take(e as Record<string, unknown>, fileNo, offset, end - start);
    else malformedLines++;
  }

  return {
    line,
    turns() {
      if (dirty) {
        sorted = [...byId.values()].sort((a, b) => b.startedAt - a.startedAt || (a.turnId < b.turnId ? 1 : -1));
        dirty = false;
      }
      return sorted;
    },
    turn: (turnId) => byId.get(turnId),
    refusals: () => refusals,
    malformedLines: () => malformedLines,
  };
}
