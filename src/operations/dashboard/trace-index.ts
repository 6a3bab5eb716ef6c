import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseTraceValue } from '../../runtime/trace/trace-schema.js';

/**
 * An in-memory index of the JSONL traces, kept current by reading only the bytes appended since
 * the last look: each day file's consumed length is remembered, and a request costs one readdir,
 * one stat per file and a read of what is new. A line without its newline yet (a write in
 * progress, or a torn last line) is left for the next refresh; a complete line that is not JSON
 * is counted and skipped. A file that shrank or disappeared (pruned, replaced) rebuilds the index.
 *
 * The index keeps per turn only what lists, filters and stats need, plus where its lines are, so
 * one turn's page reads just those byte ranges. model_call lines (whole prompts, the bulk of the
 * bytes) are recognised from their first bytes and never parsed here.
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
  /** Byte ranges of this turn's lines, oldest first. */
  lines: LineRef[];
}

export interface LineRef {
  file: string;
  offset: number;
  length: number;
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
/** `{"ts":"…","type":"…","turnId":"…"` — the tracer writes these three keys first. */
const HEAD = /^\{"ts":"([^"]*)","type":"([a-z_]+)","turnId":"([^"\\]*)"/;

/**
 * The list's message: cut before the word that crosses the limit. Cut inside a word, the first
 * half of a pasted key would match no secret shape when the page redacts it, and be shown.
 */
function clip(text: string): string {
  if (text.length <= TEXT_CHARS) return text;
  return `${text.slice(0, TEXT_CHARS + 1).replace(/\S*$/, '').trimEnd()}…`;
}

interface FileState {
  consumed: number;
}

export function createTraceIndex(dir: string): TraceIndex {
  let files = new Map<string, FileState>();
  let byId = new Map<string, TurnSummary>();
  let refusals: RefusalSummary[] = [];
  let sorted: TurnSummary[] = [];
  let dirty = false;
  let malformedLines = 0;
  let rebuilds = 0;
  let running: Promise<void> | undefined;

  function reset(): void {
    files = new Map();
    byId = new Map();
    refusals = [];
    sorted = [];
    dirty = false;
    malformedLines = 0;
    rebuilds++;
  }

  function turnFor(turnId: string, at: number): TurnSummary {
    let t = byId.get(turnId);
    if (!t) {
      t = { turnId, startedAt: at, platform: '', userKey: '', sessionId: '', text: '', search: '', steps: 0, promptTokens: 0, completionTokens: 0, modelCalls: 0, toolCalls: [], approvals: 0, subagents: [], lines: [] };
      byId.set(turnId, t);
      dirty = true;
    }
    return t;
  }

  /**
   * Every line of a turn is kept for its page (a record type this build does not know too); the
   * summary reads only records that match trace-schema.ts.
   */
  function take(raw: Record<string, unknown>, ref: LineRef): void {
    const e = parseTraceValue(raw);
    const at = Date.parse(String(raw.ts)) || 0;
    if (e?.type === 'refusal' && e.turnId === undefined) {
      refusals.push({ at, reason: e.reason, platform: e.platform });
      return;
    }
    if (typeof raw.turnId !== 'string' || !raw.turnId) return;
    const t = turnFor(raw.turnId, at);
    t.lines.push(ref);
    switch (e?.type) {
      case 'turn_start':
        t.startedAt = at;
        t.platform = e.platform;
        t.userKey = e.userKey;
        t.sessionId = e.sessionId;
        t.text = clip(e.text);
        t.search = e.text.slice(0, SEARCH_CHARS).toLowerCase();
        dirty = true;
        break;
      case 'tool_call':
        t.toolCalls.push({ name: e.name, ok: e.ok, durationMs: e.durationMs, ...(e.errorKind !== undefined && { errorKind: e.errorKind }), ...(e.agent !== undefined && { agent: e.agent }) });
        break;
      case 'approval':
        if (e.status === 'pending') t.approvals++;
        break;
      case 'subagent':
        t.subagents.push(e.agent);
        break;
      case 'turn_end':
        t.outcome = e.outcome;
        t.steps = e.steps;
        t.durationMs = e.durationMs;
        t.promptTokens = e.promptTokens;
        t.completionTokens = e.completionTokens;
        break;
      case 'refusal':
        refusals.push({ at, reason: e.reason, platform: e.platform });
        break;
      default:
        break;
    }
  }

  function line(buf: Buffer, start: number, end: number, ref: LineRef): void {
    if (end <= start) return;
    const head = HEAD.exec(buf.toString('utf8', start, Math.min(end, start + 240)));
    if (head?.[2] === 'model_call') {
      const t = turnFor(head[3]!, Date.parse(head[1]!) || 0);
      t.lines.push(ref);
      t.modelCalls++;
      return;
    }
    let e: unknown;
    try {
      e = JSON.parse(buf.toString('utf8', start, end));
    } catch {
      malformedLines++;
      return;
    }
    if (e && typeof e === 'object' && !Array.isArray(e)) take(e as Record<string, unknown>, ref);
    else malformedLines++;
  }

  /**
   * Reads [from, to) of one file; returns how far complete lines reached. One buffer is reused
   * (the unfinished line moved to its front): fresh multi-megabyte buffers per chunk cost more in
   * page faults than the parsing on a busy machine.
   */
  async function readNew(file: string, from: number, to: number): Promise<number> {
    const handle = await open(path.join(dir, file), 'r');
    try {
      let buf = Buffer.allocUnsafe(Math.min(CHUNK, to - from));
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
        const view = buf.subarray(0, carried + bytesRead);
        let start = 0;
        for (let nl = view.indexOf(10, start); nl !== -1; nl = view.indexOf(10, start)) {
          line(view, start, nl, { file, offset: carryAt + start, length: nl - start });
          start = nl + 1;
        }
        buf.copyWithin(0, start, view.length);
        carried = view.length - start;
        carryAt += start;
      }
      return carryAt;
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

  async function refreshOnce(): Promise<void> {
    const names = await listFiles();
    if ([...files.keys()].some((f) => !names.includes(f))) reset();
    for (const name of names) {
      let size: number;
      try {
        size = (await stat(path.join(dir, name))).size;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // pruned while we looked
        throw err;
      }
      const state = files.get(name) ?? { consumed: 0 };
      if (size < state.consumed) {
        reset();
        return refreshOnce();
      }
      files.set(name, state);
      if (size > state.consumed) state.consumed = await readNew(name, state.consumed, size);
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
      const byFile = new Map<string, LineRef[]>();
      for (const ref of t.lines) (byFile.get(ref.file) ?? byFile.set(ref.file, []).get(ref.file)!).push(ref);
      for (const [file, refs] of byFile) {
        let handle;
        try {
          handle = await open(path.join(dir, file), 'r');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw err;
        }
        try {
          for (const ref of refs) {
            const buf = Buffer.allocUnsafe(ref.length);
            const { bytesRead } = await handle.read(buf, 0, ref.length, ref.offset);
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
      return out;
    },
    health: () => ({ files: files.size, bytes: [...files.values()].reduce((n, f) => n + f.consumed, 0), malformedLines, rebuilds: Math.max(0, rebuilds) }),
  };
}
