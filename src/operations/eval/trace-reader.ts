import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseTraceLine, type TraceRecord } from '../../runtime/trace/trace-schema.js';
import { createPromptJoiner } from '../../runtime/trace/trace-prompts.js';

/** A trace record as read back (trace-schema.ts). */
export type TracedEvent = TraceRecord;

const MAX_FILES = 400;

/**
 * Every record in a traces folder's day files, oldest file first; torn lines and records that match
 * no type of trace-schema.ts are skipped. Model calls come back with their whole prompt (trace-prompts.ts).
 */
export async function readTraceEvents(dir: string): Promise<TracedEvent[]> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => /^\d{4}-\d{2}-\d{2}\.jsonl$/.test(f)).sort().slice(-MAX_FILES);
  } catch {
    return [];
  }
  const events: TracedEvent[] = [];
  for (const f of files) {
    const text = await readFile(path.join(dir, f), 'utf8');
    const join = createPromptJoiner();
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const e = parseTraceLine(line);
      if (e?.turnId !== undefined) events.push(join(e));
    }
  }
  return events;
}

/** Tool arguments as recorded: parsed when the trace kept the raw JSON text. */
export function parsedArgs(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}
