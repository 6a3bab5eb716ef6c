import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { traceEventProblems, type TraceEvent } from './trace-schema.js';
import { createPromptDeltas } from './trace-prompts.js';

export type { SubAgentMark, TraceEvent } from './trace-schema.js';

/** Longest a recorded line waits in memory before it is written (a turn's end writes it sooner). */
const FLUSH_AFTER_MS = 1_000;
/** Characters of waiting lines that are written at once, whatever else is pending (bounds the memory). */
const MAX_WAITING_CHARS = 256 * 1024;
/** Records written mid-run, which wait for the run's end (or the bounds above); every other type is written on the next turn of the event loop. */
const MID_RUN: ReadonlySet<string> = new Set(['turn_start', 'model_call', 'tool_call']);

export interface Tracer {
  record(event: TraceEvent): void;
  /** Resolves when every recorded event has been written (tests, `/hermes status`). */
  flush(): Promise<void>;
  /** Flushes and closes the open file (shutdown). */
  close(): Promise<void>;
  readonly dir: string;
}

/**
 * Appends to HERMES_DATA_DIR/traces/YYYY-MM-DD.jsonl through one open file per day, so lines
 * never interleave and no file is opened per event. `redact` turns an event into its JSON text
 * with secrets removed. A failing disk is logged (once per minute at most) and never fails a
 * turn: traces are dropped, the bot keeps answering.
 *
 * An event is serialised when it is recorded (later changes to the objects it names cannot reach
 * the trace). Lines wait in memory and go out together in one synchronous append (into the page
 * cache that takes microseconds, where an asynchronous write per line, a thread-pool round trip
 * each, cost more than all the rest of a step's bookkeeping): right after a record that ends a
 * turn or a run (turn_end, an approval, a sub-agent's end, a refusal), once `flushAfterMs` passed
 * since the first waiting line (a long turn's steps), or at once when `maxWaitingChars` characters wait
 * (the queue is bounded). A turn's model and tool calls therefore cost one write per turn, not one
 * per step. `flush()` and `close()` write what is waiting (a clean stop loses nothing; a crash
 * handler calls `flush()` before exiting); a process killed outright loses at most the lines of
 * the last `flushAfterMs`, never a message (messages are in the store, not here).
 *
 * A model call's prompt is written once: a call whose prompt starts with the previous call's
 * messages carries only the new ones and a reference (trace-prompts.ts; readers join them back).
 */
export function createTracer(opts: { dir: string; log: Logger; redact: (v: unknown) => string; now?: () => number; invalid?: 'throw' | 'log'; flushAfterMs?: number; maxWaitingChars?: number }): Tracer {
  const now = opts.now ?? Date.now;
  const flushAfterMs = opts.flushAfterMs ?? FLUSH_AFTER_MS;
  const maxWaitingChars = opts.maxWaitingChars ?? MAX_WAITING_CHARS;
  let lastErrorAt = 0;
  let lastInvalidAt = -Infinity;

  /**
   * Every record is checked against trace-schema.ts before it is written. Tests make a mismatch
   * throw (the writer is wrong); a running bot logs it (at most once a minute) and writes the
   * record anyway: a trace with a surprising field beats no trace.
   */
  function check(event: TraceEvent): void {
    const problems = traceEventProblems(event);
    if (problems.length === 0) return;
    if (opts.invalid === 'throw') throw new Error(`trace record ${event.type} does not match its schema: ${problems.join('; ')}`);
    if (now() - lastInvalidAt > 60_000) {
      lastInvalidAt = now();
      opts.log.warn({ type: event.type, problems }, 'trace record does not match its schema');
    }
  }
  let fd: number | undefined;
  let fdDay = '';
  let dirMade = false;
  /** Lines recorded since the last write, all of one day (a new day writes out the old one first). */
  let waiting: string[] = [];
  let waitingChars = 0;
  let waitingDay = '';
  /** The write after a run ended (next turn of the event loop, so runs ending together share it). */
  let soon: NodeJS.Immediate | undefined;
  /** The write that bounds how long a line waits. */
  let later: NodeJS.Timeout | undefined;
  const prompts = createPromptDeltas();

  function reportError(err: Error): void {
    if (now() - lastErrorAt > 60_000) {
      lastErrorAt = now();
      opts.log.error({ err: err.message, dir: opts.dir }, 'trace write failed; traces are being dropped');
    }
  }

  function closeFile(): void {
    if (fd === undefined) return;
    try {
      closeSync(fd);
    } catch {
      // Already gone: nothing left to release.
    }
    fd = undefined;
  }

  function fileFor(day: string): number {
    if (fd !== undefined && fdDay === day) return fd;
    closeFile();
    if (!dirMade) {
      mkdirSync(opts.dir, { recursive: true });
      dirMade = true;
    }
    fd = openSync(path.join(opts.dir, `${day}.jsonl`), 'a');
    fdDay = day;
    return fd;
  }

  function writeWaiting(): void {
    if (soon) clearImmediate(soon);
    soon = undefined;
    if (later) clearTimeout(later);
    later = undefined;
    if (waiting.length === 0) return;
    const bytes = Buffer.from(waiting.join(''));
    const day = waitingDay;
    waiting = [];
    waitingChars = 0;
    try {
      const file = fileFor(day);
      // A regular file takes the whole buffer at once; the loop is for the rare short write.
      for (let off = 0; off < bytes.length; ) off += writeSync(file, bytes, off);
    } catch (err) {
      reportError(err as Error);
      closeFile(); // reopened on the next write: the disk may be back by then
      prompts.reset(); // the lost lines may hold prompts later calls would refer to
    }
  }

  return {
    dir: opts.dir,
    record(event) {
      const ts = new Date(now()).toISOString();
      const day = ts.slice(0, 10);
      // Checked as written: a model call's new messages, not the whole prompt again.
      const written = prompts.encode(event, day);
      try {
        check(written);
      } catch (err) {
        prompts.reset(); // refused, so not written: no later call may refer to it
        throw err;
      }
      let line: string;
      try {
        line = `{"ts":"${ts}",${opts.redact(written).slice(1)}\n`;
      } catch {
        prompts.reset();
        line = `${JSON.stringify({ ts, type: event.type, turnId: event.turnId, note: 'unserialisable event' })}\n`;
      }
      prompts.ended(event);
      if (day !== waitingDay) writeWaiting();
      waiting.push(line);
      waitingChars += line.length;
      waitingDay = day;
      if (waitingChars >= maxWaitingChars) writeWaiting();
      else if (!MID_RUN.has(event.type)) soon ??= setImmediate(writeWaiting);
      else if (!later) {
        later = setTimeout(writeWaiting, flushAfterMs);
        // A waiting line must not keep a process alive that has nothing else to do (close() writes it).
        later.unref();
      }
    },
    async flush() {
      writeWaiting();
    },
    async close() {
      writeWaiting();
      closeFile();
    },
  };
}
