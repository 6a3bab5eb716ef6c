import { joinPrompts } from '../../runtime/trace/trace-prompts.js';
import { listDayFiles, readLinesAt, readPiecewise, readRange, sizeOf } from './day-files.js';
import { createTurnSummaries, type RefusalSummary, type TurnSummary } from './turn-summaries.js';

/**
 * An in-memory index of the JSONL traces, kept current by reading only the bytes appended since
 * the last look: each day file's consumed length is remembered, and a request costs one readdir,
 * one stat per file and a read of what is new. A line without its newline yet (a write in
 * progress, or a torn last line) is left for the next refresh; a complete line that is not JSON
 * is counted and skipped. A file that shrank or disappeared (pruned, replaced) rebuilds the index.
 *
 * What it keeps per turn is turn-summaries.ts's; the files are read by day-files.ts. A first
 * refresh over 10,000 turns (48 MB) holds about 6 MB of heap (bench section 7).
 */

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

const CHUNK = 4 << 20;

interface FileState {
  /** The file's number in `fileNames` (what a turn's `lines` hold). */
  no: number;
  consumed: number;
}

export function createTraceIndex(dir: string): TraceIndex {
  let files = new Map<string, FileState>();
  let fileNames: string[] = [];
  let summaries = createTurnSummaries();
  let rebuilds = 0;
  let running: Promise<void> | undefined;

  function reset(): void {
    files = new Map();
    fileNames = [];
    summaries = createTurnSummaries();
    rebuilds++;
  }

  /** Complete lines of `buf[0, length)`, which starts at byte `from` of file `fileNo`; returns how far they reached. */
  function completeLines(buf: Buffer, length: number, fileNo: number, from: number): number {
    let start = 0;
    for (let nl = buf.indexOf(10); nl !== -1 && nl < length; nl = buf.indexOf(10, start)) {
      summaries.line(buf, start, nl, fileNo, from + start);
      start = nl + 1;
      if (start >= length) break;
    }
    return from + start;
  }

  /**
   * The files' sizes are asked all at once; then each file's new bytes are read while the previous
   * file's are parsed (two buffers taking turns), so a cold build over a month of files does not
   * wait on one open, read and close after another. New bytes over CHUNK are read piecewise.
   */
  async function refreshOnce(): Promise<void> {
    const names = await listDayFiles(dir);
    if ([...files.keys()].some((f) => !names.includes(f))) reset();
    const sizes = await Promise.all(names.map((name) => sizeOf(dir, name)));
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
      const p = readRange(dir, w.name, w.state.consumed, w.to, buffers[k % 2]!);
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
        if (got !== undefined) w.state.consumed = completeLines(buffers[k % 2]!, got, w.state.no, w.state.consumed);
      } else {
        // More new bytes than one buffer: read piecewise (the next file waits).
        w.state.consumed = await readPiecewise(dir, w.name, w.state.consumed, w.to, Buffer.allocUnsafe(CHUNK), (buf, length, at) => completeLines(buf, length, w.state.no, at));
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
    turns: () => summaries.turns(),
    turn: (turnId) => summaries.turn(turnId),
    refusals: () => summaries.refusals(),
    async readEvents(turnId) {
      const t = summaries.turn(turnId);
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
        for (const text of (await readLinesAt(dir, name, refs)) ?? []) {
          try {
            out.push(JSON.parse(text) as Record<string, unknown>);
          } catch {
            // the file changed under us; the next refresh rebuilds
          }
        }
      }
      // Model calls with their whole prompt (a line may carry only what was new: trace-prompts.ts).
      return joinPrompts(out);
    },
    health: () => ({ files: files.size, bytes: [...files.values()].reduce((n, f) => n + f.consumed, 0), malformedLines: summaries.malformedLines(), rebuilds: Math.max(0, rebuilds) }),
  };
}
