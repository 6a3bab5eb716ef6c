import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { TraceRecordOf } from '../../runtime/trace/trace-schema.js';
import { joinPrompts } from '../../runtime/trace/trace-prompts.js';

/**
 * An in-memory index of the JSONL traces, kept current by reading only the bytes appended since
 * the last look: each day file's consumed length is remembered, and a request costs one readdir,
 * one stat per file and a read of what is new. A line without its newline yet (a write in
 * progress, or a torn last line) is left for the next refresh; a complete line that is not JSON
 * is counted and skipped. A file that shrank or disappeared (pruned, replaced) rebuilds the index.
 *
 * The index keeps per turn only what lists, filters and stats need, plus where its lines are, so
 * one turn's page reads just those byte ranges: no parsed record is held, the byte ranges are
 * numbers in one flat array, and the values many turns share (platform, user, session, outcome,
 * tool names) are one string each. model_call lines (whole prompts, the bulk of the bytes) are
 * recognised from their first bytes, without decoding them, and never parsed here. A first
 * refresh over 10,000 turns (48 MB) holds about 6 MB of heap (bench section 7).
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

export interface IndexHealth {
  files: number;
  bytes: number;
  /** Complete lines that were not JSON (skipped). */
  malformedLines: number;
  /** How many times a shrunk or vanished file made the index start over. */
  rebuilds: number;
}

export interface TraceIndex {
  /** Reads what was appended since the last call; concurrent callers share one read. */
  refresh(): Promise<void>;
  /** Every indexed turn, newest first. */
  turns(): readonly TurnSummary[];
  turn(turnId: string): TurnSummary | undefined;
  refusals(): readonly RefusalSummary[];
  /** The turn's trace events as written, oldest first (read from disk by byte range). */
  readEvents(turnId: string): Promise<Array<Record<string, unknown>>>;
  health(): IndexHealth;
}

const DAY_FILE = /^\d{4}-\d{2}-\d{2}\.jsonl$/;
const TEXT_CHARS = 300;
const SEARCH_CHARS = 2000;
const CHUNK = 4 << 20;
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
 * The records the summary reads, and the checks of trace-schema.ts's types for them, written out:
 * a zod parse per line (and the copy of the record it returns) was a third of a cold index build.
 * test/dashboard/summary-records.test.ts holds these to the schema, key by key, so they cannot
 * drift apart.
 */
type Check = 'string' | 'string?' | 'boolean' | 'count' | 'ms' | 'number?' | 'present' | 'any?';
export const SUMMARY_RECORDS = {
  turn_start: { type: 'string', turnId: 'string', sessionId: 'string', platform: 'string', userKey: 'string', text: 'string' },
  tool_call: { type: 'string', turnId: 'string', callId: 'string', name: 'string', args: 'present', ok: 'boolean', result: 'string', raw: 'any?', startedAt: 'number?', durationMs: 'ms', errorKind: 'string?', agent: 'string?', parentCallId: 'string?' },
  subagent: { type: 'string', turnId: 'string', callId: 'string', agent: 'string', outcome: 'string', steps: 'count', durationMs: 'ms', promptTokens: 'count', completionTokens: 'count' },
  approval: { type: 'string', turnId: 'string', approvalId: 'string', tool: 'string', status: 'string', by: 'string?' },
  turn_end: { type: 'string', turnId: 'string', outcome: 'string', steps: 'count', durationMs: 'ms', promptTokens: 'count', completionTokens: 'count' },
  refusal: { type: 'string', turnId: 'string?', reason: 'string', source: 'string', platform: 'string', userKey: 'string' },
} as const satisfies Record<string, Record<string, Check>>;
export type SummaryType = keyof typeof SUMMARY_RECORDS;

function passes(v: unknown, check: Check, present: boolean): boolean {
  switch (check) {
    case 'string':
      return typeof v === 'string';
    case 'string?':
      return v === undefined || typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'count':
      return Number.isSafeInteger(v) && (v as number) >= 0;
    case 'ms':
      return typeof v === 'number' && Number.isFinite(v) && v >= 0;
    case 'number?':
      return v === undefined || (typeof v === 'number' && Number.isFinite(v));
    case 'present':
      return present;
    case 'any?':
      return true;
  }
}

/** Whether `raw` (a `type` record, parsed JSON) is a record of that type as trace-schema.ts defines it. */
export function isSummaryRecord<T extends SummaryType>(type: T, raw: Record<string, unknown>): raw is TraceRecordOf<T> & Record<string, unknown> {
  if (raw.type !== type) return false;
  const checks: Record<string, Check> = SUMMARY_RECORDS[type];
  for (const key in checks) if (!passes(raw[key], checks[key]!, key in raw)) return false;
  return true;
}

/**
 * The list's message: cut before the word that crosses the limit. Cut inside a word, the first
 * half of a pasted key would match no secret shape when the page redacts it, and be shown.
 */
function clip(text: string): string {
  if (text.length <= TEXT_CHARS) return text;
  return `${text.slice(0, TEXT_CHARS + 1).replace(/\S*$/, '').trimEnd()}…`;
}

interface FileState {
  /** The file's number in `fileNames` (what a turn's `lines` hold). */
  no: number;
  consumed: number;
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

export function createTraceIndex(dir: string): TraceIndex {
  let files = new Map<string, FileState>();
  let fileNames: string[] = [];
  let byId = new Map<string, TurnSummary>();
  let refusals: RefusalSummary[] = [];
  let sorted: TurnSummary[] = [];
  let dirty = false;
  let malformedLines = 0;
  let rebuilds = 0;
  let running: Promise<void> | undefined;
  /** One copy of each value many turns share (platform, user, session, outcome, tool and agent names). */
  let shared = new Map<string, string>();

  function reset(): void {
    files = new Map();
    fileNames = [];
    byId = new Map();
    refusals = [];
    sorted = [];
    shared = new Map();
    dirty = false;
    malformedLines = 0;
    rebuilds++;
  }

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

  /**
   * Reads [from, to) of one file into `buf` (grown when one line is longer; returned for the next
   * file); returns how far complete lines reached. The unfinished line is moved to the buffer's
   * front: fresh multi-megabyte buffers per chunk cost more in page faults than the parsing on a
   * busy machine.
   */
  async function readNew(file: FileState, name: string, from: number, to: number, buf: Buffer): Promise<{ consumed: number; buf: Buffer }> {
    const handle = await open(path.join(dir, name), 'r');
    try {
      let carried = 0;
      let carryAt = from;
      let pos = from;
      while (pos < to) {
        if (carried === buf.length) {
          // One line longer than the buffer: grow it.
          const bigger = Buffer.allocUnsafe(buf.length * 2);
          buf.copy(bigger, 0, 0, carried);
          buf = bigger;
        }
        const { bytesRead } = await handle.read(buf, carried, Math.min(buf.length - carried, to - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        const filled = carried + bytesRead;
        let start = 0;
        for (let nl = buf.indexOf(10, start); nl !== -1 && nl < filled; nl = buf.indexOf(10, start)) {
          line(buf, start, nl, file.no, carryAt + start);
          start = nl + 1;
          if (start >= filled) break;
        }
        buf.copyWithin(0, start, filled);
        carried = filled - start;
        carryAt += start;
      }
      return { consumed: carryAt, buf };
    } finally {
      await handle.close();
    }
  }

  async function listFiles(): Promise<string[]> {
    try {
      return (await readdir(dir)).filter((f) => DAY_FILE.test(f)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  /** Complete lines of `buf[0, length)`, which starts at byte `from` of the file; returns how far they reached. */
  function completeLines(buf: Buffer, length: number, file: FileState, from: number): number {
    let start = 0;
    for (let nl = buf.indexOf(10); nl !== -1 && nl < length; nl = buf.indexOf(10, start)) {
      line(buf, start, nl, file.no, from + start);
      start = nl + 1;
      if (start >= length) break;
    }
    return from + start;
  }

  /** Bytes [from, to) of a file into `buf` (as many as are there), or undefined if the file is gone. */
  async function readRange(name: string, from: number, to: number, buf: Buffer): Promise<number | undefined> {
    let handle;
    try {
      handle = await open(path.join(dir, name), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // pruned while we looked
      throw err;
    }
    try {
      let got = 0;
      while (got < to - from) {
        const { bytesRead } = await handle.read(buf, got, to - from - got, from + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got;
    } finally {
      await handle.close();
    }
  }

  async function sizeOf(name: string): Promise<number | undefined> {
    try {
      return (await stat(path.join(dir, name))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // pruned while we looked
      throw err;
    }
  }

  /**
   * The files' sizes are asked all at once; then each file's new bytes are read while the previous
   * file's are parsed (two buffers taking turns), so a cold build over a month of files does not
   * wait on one open, read and close after another. New bytes over CHUNK are read piecewise.
   */
  async function refreshOnce(): Promise<void> {
    const names = await listFiles();
    if ([...files.keys()].some((f) => !names.includes(f))) reset();
    const sizes = await Promise.all(names.map(sizeOf));
    for (let i = 0; i < names.length; i++) {
      const state = files.get(names[i]!);
      if (state && sizes[i] !== undefined && sizes[i]! < state.consumed) {
        reset();
        return refreshOnce();
      }
    }
    const work: Array<{ name: string; state: FileState; to: number }> = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const size = sizes[i];
      if (size === undefined) continue;
      let state = files.get(name);
      if (!state) {
        state = { no: fileNames.push(name) - 1, consumed: 0 };
        files.set(name, state);
      }
      if (size > state.consumed) work.push({ name, state, to: size });
    }
    const largest = Math.min(CHUNK, Math.max(0, ...work.map((w) => w.to - w.state.consumed)));
    const buffers = work.length ? [Buffer.allocUnsafe(largest), ...(work.length > 1 ? [Buffer.allocUnsafe(largest)] : [])] : [];
    const load = (k: number): Promise<number | undefined> | undefined => {
      const w = work[k];
      if (!w || w.to - w.state.consumed > CHUNK) return undefined;
      const p = readRange(w.name, w.state.consumed, w.to, buffers[k % 2]!);
      p.catch(() => {}); // awaited below; not an unhandled rejection if an earlier file throws first
      return p;
    };
    let next = load(0);
    for (let k = 0; k < work.length; k++) {
      const w = work[k]!;
      const loading = next;
      if (loading) {
        const got = await loading;
        next = load(k + 1);
        if (got !== undefined) w.state.consumed = completeLines(buffers[k % 2]!, got, w.state, w.state.consumed);
      } else {
        // More new bytes than one buffer: read piecewise (the next file waits).
        const r = await readNew(w.state, w.name, w.state.consumed, w.to, Buffer.allocUnsafe(CHUNK));
        w.state.consumed = r.consumed;
        next = load(k + 1);
      }
    }
  }

  return {
    refresh() {
      running ??= refreshOnce().finally(() => {
        running = undefined;
      });
      return running;
    },
    turns() {
      if (dirty) {
        sorted = [...byId.values()].sort((a, b) => b.startedAt - a.startedAt || (a.turnId < b.turnId ? 1 : -1));
        dirty = false;
      }
      return sorted;
    },
    turn: (turnId) => byId.get(turnId),
    refusals: () => refusals,
    async readEvents(turnId) {
      const t = byId.get(turnId);
      if (!t) return [];
      const out: Array<Record<string, unknown>> = [];
      const names = fileNames;
      const byFile = new Map<number, number[]>();
      for (let i = 0; i + 2 < t.lines.length; i += 3) {
        const no = t.lines[i]!;
        (byFile.get(no) ?? byFile.set(no, []).get(no)!).push(t.lines[i + 1]!, t.lines[i + 2]!);
      }
      for (const [no, refs] of byFile) {
        const name = names[no];
        if (name === undefined) continue;
        let handle;
        try {
          handle = await open(path.join(dir, name), 'r');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw err;
        }
        try {
          for (let i = 0; i < refs.length; i += 2) {
            const length = refs[i + 1]!;
            const buf = Buffer.allocUnsafe(length);
            const { bytesRead } = await handle.read(buf, 0, length, refs[i]!);
            try {
              out.push(JSON.parse(buf.toString('utf8', 0, bytesRead)) as Record<string, unknown>);
            } catch {
              // the file changed under us; the next refresh rebuilds
            }
          }
        } finally {
          await handle.close();
        }
      }
      // Model calls with their whole prompt (a line may carry only what was new: trace-prompts.ts).
      return joinPrompts(out);
    },
    health: () => ({ files: files.size, bytes: [...files.values()].reduce((n, f) => n + f.consumed, 0), malformedLines, rebuilds: Math.max(0, rebuilds) }),
  };
}
