import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Context } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator, type IdGenerator, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { TelemetryConfig } from '../../settings/config.js';
import type { PlannedSpan } from './span-plan.js';

/**
 * The only file that loads the OpenTelemetry SDK, and only when an endpoint is configured
 * (telemetry.ts imports it dynamically). Planned spans become SDK spans, batched and sent as
 * OTLP/HTTP JSON. The provider is private to this file: nothing is registered globally, so no
 * library we ship on starts tracing behind our back.
 */

export interface SpanPipeline {
  emit(spans: readonly PlannedSpan[]): void;
  /** Sends what is queued; resolves within the export timeout whatever the collector does. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export interface PipelineOptions {
  config: TelemetryConfig;
  log: Pick<Logger, 'warn' | 'info'>;
  now: () => number;
  serviceVersion: string;
  /** How often a collector that keeps failing is mentioned again in the log. */
  failureLogEveryMs?: number;
}

/** Bounds that keep a slow or absent collector from growing memory or request sizes without end. */
const QUEUE_SPANS = 2048;
const BATCH_SPANS = 64;
const BATCH_DELAY_MS = 2000;
/** Long prompts are cut here (an attribute value); a batch then stays a few megabytes at most. */
const ATTRIBUTE_CHARS = 16_384;

export function createSpanPipeline(opts: PipelineOptions): SpanPipeline {
  const { config } = opts;
  // Ids for the next span only, set right before a synchronous startSpan: the turn and sub-agent
  // spans need ids derived from the turn (span-plan.ts), everything else gets random ones.
  const random = new RandomIdGenerator();
  let fixed: { traceId?: string; spanId?: string } | undefined;
  const idGenerator: IdGenerator = {
    generateTraceId: () => fixed?.traceId ?? random.generateTraceId(),
    generateSpanId: () => fixed?.spanId ?? random.generateSpanId(),
  };

  const exporter = loggedExporter(
    new OTLPTraceExporter({ url: config.tracesUrl, headers: config.headers, timeoutMillis: config.timeoutMs }),
    config.tracesUrl,
    opts,
  );
  const processor = new BatchSpanProcessor(exporter, {
    maxQueueSize: QUEUE_SPANS,
    maxExportBatchSize: BATCH_SPANS,
    scheduledDelayMillis: BATCH_DELAY_MS,
    exportTimeoutMillis: config.timeoutMs,
  });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: opts.serviceVersion }),
    sampler: new AlwaysOnSampler(),
    idGenerator,
    spanLimits: { attributeValueLengthLimit: ATTRIBUTE_CHARS },
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('hermes-agent', opts.serviceVersion);

  function parentContext(s: PlannedSpan): Context {
    if (!s.parentSpanId) return ROOT_CONTEXT;
    return trace.setSpanContext(ROOT_CONTEXT, { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: false });
  }

  function emitOne(s: PlannedSpan): void {
    fixed = s.parentSpanId ? { spanId: s.spanId } : { traceId: s.traceId, spanId: s.spanId };
    let span;
    try {
      span = tracer.startSpan(s.name, { kind: s.kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: new Date(s.startMs), attributes: s.attributes }, parentContext(s));
    } finally {
      fixed = undefined;
    }
    for (const e of s.events ?? []) span.addEvent(e.name, e.attributes, new Date(e.atMs));
    if (s.error) {
      span.setAttribute(ATTR_ERROR_TYPE, s.error.type);
      span.setStatus({ code: SpanStatusCode.ERROR, ...(s.error.message !== undefined && { message: s.error.message }) });
    }
    span.end(new Date(Math.max(s.startMs, s.endMs)));
  }

  /** Waits for `work`, but never longer than one export may take (plus a little). */
  const bounded = (work: Promise<unknown>) => {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, config.timeoutMs + 1000);
      timer.unref();
    });
    return Promise.race([work.then(() => undefined, () => undefined), limit]).finally(() => clearTimeout(timer));
  };

  return {
    emit(spans) {
      for (const s of spans) emitOne(s);
    },
    flush: () => bounded(provider.forceFlush()),
    shutdown: () => bounded(provider.shutdown()),
  };
}

/**
 * Reports export failures to our log: the first one says spans are being dropped and why, then at
 * most one line per `failureLogEveryMs` (with how many batches failed meanwhile), and one line when
 * the collector answers again. The URL is shown without its path, user or query: only the host.
 */
function loggedExporter(inner: SpanExporter, url: string, opts: PipelineOptions): SpanExporter {
  const every = opts.failureLogEveryMs ?? 10 * 60_000;
  const where = new URL(url).host;
  let failing = false;
  let lastLogAt = -Infinity;
  let failedSinceLog = 0;

  function report(result: ExportResult, count: number): void {
    if (result.code === ExportResultCode.SUCCESS) {
      if (failing) opts.log.info({ collector: where }, 'OpenTelemetry export works again');
      failing = false;
      failedSinceLog = 0;
      return;
    }
    failedSinceLog += 1;
    const now = opts.now();
    if (failing && now - lastLogAt < every) return;
    opts.log.warn(
      { collector: where, reason: result.error?.message ?? 'unknown', spansDropped: count, failedBatches: failedSinceLog },
      'OpenTelemetry export failed: spans are dropped until the collector answers (turns are not affected)',
    );
    failing = true;
    lastLogAt = now;
    failedSinceLog = 0;
  }

  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      inner.export(spans, (result) => {
        report(result, spans.length);
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}
