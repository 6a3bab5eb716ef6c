import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TraceEvent } from '../../runtime/trace/tracer.js';

export type TracedEvent = TraceEvent & { ts?: string };

const MAX_FILES = 400;

/** Every event in a traces folder's day files, oldest file first; torn or foreign lines are skipped. */
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
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        const e = JSON.parse(line) as TracedEvent;
        if (e && typeof e === 'object' && typeof e.type === 'string' && typeof e.turnId === 'string') events.push(e);
      } catch {
        // a torn last line after a crash
      }
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
