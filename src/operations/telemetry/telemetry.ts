import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { TelemetryConfig } from '../../settings/config.js';
import type { TraceEvent, Tracer } from '../../runtime/trace/tracer.js';

/**
 * OpenTelemetry export (docs/telemetry.md), as a listener on the trace records. Off unless an
 * OTLP endpoint is configured; then, and only then, the SDK is loaded (a dynamic import), so a
 * bot without telemetry neither loads nor pays for it. Nothing here can fail or slow a turn:
 * planning a span is a little synchronous work, sending is batched in the background.
 */
export interface Telemetry {
  record(event: TraceEvent, atMs: number): void;
  /** Sends what is queued, within the export timeout. Never rejects. */
  flush(): Promise<void>;
  /** Flushes and stops (graceful shutdown). Never rejects. */
  shutdown(): Promise<void>;
}

export interface TelemetryDeps {
  log: Logger;
  now: () => number;
  /** The trace redactor: content on spans is redacted exactly like trace files. */
  redact: (value: unknown) => string;
  /** The model server's base URL, for server.address on model spans. */
  modelBaseUrl?: string;
  failureLogEveryMs?: number;
}

export async function startTelemetry(config: TelemetryConfig | undefined, deps: TelemetryDeps): Promise<Telemetry | undefined> {
  if (!config) return undefined;
  const [{ createSpanPlanner }, { createSpanPipeline }, serviceVersion] = await Promise.all([import('./span-plan.js'), import('./otel-sdk.js'), packageVersion()]);
  const log = deps.log.child({ component: 'telemetry' });
  const planner = createSpanPlanner({ content: config.content, redact: deps.redact, server: serverOf(deps.modelBaseUrl) });
  const pipeline = createSpanPipeline({ config, log, now: deps.now, serviceVersion, failureLogEveryMs: deps.failureLogEveryMs });
  let brokenLogged = false;
  log.info({ collector: new URL(config.tracesUrl).host, content: config.content }, 'OpenTelemetry export on');
  return {
    record(event, atMs) {
      try {
        pipeline.emit(planner.plan(event, atMs));
      } catch (err) {
        // A bug here must cost a span, never a turn; said once so it is not missed either.
        if (!brokenLogged) log.warn({ err: (err as Error).message, type: event.type }, 'could not export a span; continuing without it');
        brokenLogged = true;
      }
    },
    flush: () => pipeline.flush(),
    shutdown: () => pipeline.shutdown(),
  };
}

/** The tracer everyone records to, also handing each record to telemetry when it is on. */
export function withTelemetry(tracer: Tracer, telemetry: Telemetry | undefined, now: () => number): Tracer {
  if (!telemetry) return tracer;
  return {
    dir: tracer.dir,
    record(event) {
      tracer.record(event);
      telemetry.record(event, now());
    },
    flush: () => tracer.flush(),
    close: () => tracer.close(),
  };
}

/** OpenAI's own API when no base URL is set. */
function serverOf(baseUrl: string | undefined): { address: string; port?: number } | undefined {
  try {
    const u = new URL(baseUrl ?? 'https://api.openai.com/v1');
    return { address: u.hostname, ...(u.port && { port: Number(u.port) }) };
  } catch {
    return undefined;
  }
}

/** service.version: this package's version, found from wherever the code runs (src/ or a build). */
async function packageVersion(): Promise<string> {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++, dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'hermes-agent' && pkg.version) return pkg.version;
    } catch {
      // not here; one folder up
    }
  }
  return 'unknown';
}
