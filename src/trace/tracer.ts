import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';

/** One JSONL line per event; every line carries the turn id so a turn can be read back whole. */
export type TraceEvent =
  | { type: 'turn_start'; turnId: string; sessionId: string; platform: string; userKey: string; text: string }
  | { type: 'model_call'; turnId: string; step: number; model: string; messages: unknown; tools: string[]; response: unknown; usage?: { promptTokens: number; completionTokens: number }; latencyMs: number; error?: string }
  | { type: 'tool_call'; turnId: string; callId: string; name: string; args: unknown; ok: boolean; result: string; raw?: unknown; durationMs: number; errorKind?: string }
  | { type: 'approval'; turnId: string; approvalId: string; tool: string; status: string; by?: string }
  | { type: 'turn_end'; turnId: string; outcome: string; steps: number; durationMs: number; promptTokens: number; completionTokens: number };

export interface Tracer {
  record(event: TraceEvent): void;
  /** Resolves when every recorded event has been written (tests, shutdown). */
  flush(): Promise<void>;
  readonly dir: string;
}

/**
 * Appends to HERMES_DATA_DIR/traces/YYYY-MM-DD.jsonl through one write chain, so lines never
 * interleave. A failing disk is logged (once per minute at most) and never fails a turn.
 */
export function createTracer(opts: { dir: string; log: Logger; redact: (v: unknown) => unknown; now?: () => number }): Tracer {
  const now = opts.now ?? Date.now;
  let chain: Promise<void> = mkdir(opts.dir, { recursive: true }).then(() => undefined, () => undefined);
  let lastErrorAt = 0;
  let pending: string[] = [];
  let scheduled = false;

  const writeBatch = async () => {
    scheduled = false;
    const lines = pending;
    pending = [];
    if (lines.length === 0) return;
    const file = path.join(opts.dir, `${new Date(now()).toISOString().slice(0, 10)}.jsonl`);
    try {
      await appendFile(file, lines.join(''));
    } catch (err) {
      if (now() - lastErrorAt > 60_000) {
        lastErrorAt = now();
        opts.log.error({ err: (err as Error).message, file }, 'trace write failed; traces are being dropped');
      }
    }
  };

  return {
    dir: opts.dir,
    record(event) {
      let line: string;
      try {
        line = JSON.stringify({ ts: new Date(now()).toISOString(), ...(opts.redact(event) as object) }) + '\n';
      } catch {
        line = JSON.stringify({ ts: new Date(now()).toISOString(), type: event.type, turnId: event.turnId, note: 'unserialisable event' }) + '\n';
      }
      pending.push(line);
      if (!scheduled) {
        scheduled = true;
        chain = chain.then(writeBatch);
      }
    },
    flush() {
      return chain;
    },
  };
}
