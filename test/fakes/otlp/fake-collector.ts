import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * An OpenTelemetry collector's OTLP/HTTP traces endpoint on 127.0.0.1, for tests. It accepts
 * `POST /v1/traces` with the JSON encoding (what @opentelemetry/exporter-trace-otlp-http sends),
 * keeps every request's headers and flattens the spans, decoding OTLP/JSON's typed attribute values
 * into plain ones, so a test can assert on names, ids, parents, attributes and status.
 */

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  /** 1 internal, 3 client (OTLP's SpanKind numbers). */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  resource: Record<string, unknown>;
  scope: string;
}

export interface FakeCollector {
  /** Base URL to set as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  requests: Array<{ path: string; contentType: string; headers: http.IncomingHttpHeaders; body: string }>;
  /** Resolves once `pred` holds for the spans received (or rejects after `timeoutMs`). */
  waitFor(pred: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type OtlpValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
};
type OtlpKeyValue = { key: string; value?: OtlpValue };

interface OtlpRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{
      scope?: { name?: string };
      spans?: Array<{
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        kind: number;
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
        attributes?: OtlpKeyValue[];
        status?: { code?: number; message?: string };
        events?: Array<{ name: string; attributes?: OtlpKeyValue[] }>;
      }>;
    }>;
  }>;
}

export function decodeValue(v: OtlpValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(decodeValue);
  if (v.kvlistValue) return decodeAttributes(v.kvlistValue.values);
  return undefined;
}

export function decodeAttributes(list: OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, decodeValue(kv.value)]));
}

/** OTLP/JSON writes ids as hex; tolerate base64 (the protobuf JSON mapping) too. */
function hexId(id: string | undefined): string | undefined {
  if (!id) return undefined;
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

export async function startFakeCollector(): Promise<FakeCollector> {
  const spans: ReceivedSpan[] = [];
  const requests: FakeCollector['requests'] = [];
  const listeners = new Set<() => void>();
  const sockets = new Set<Socket>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const contentType = String(req.headers['content-type'] ?? '');
      requests.push({ path, contentType, headers: req.headers, body });
      if (req.method !== 'POST' || path !== '/v1/traces' || !contentType.startsWith('application/json')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      let parsed: OtlpRequest;
      try {
        parsed = JSON.parse(body) as OtlpRequest;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      for (const rs of parsed.resourceSpans ?? []) {
        const resource = decodeAttributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              name: s.name,
              traceId: hexId(s.traceId) ?? '',
              spanId: hexId(s.spanId) ?? '',
              parentSpanId: hexId(s.parentSpanId),
              kind: s.kind,
              startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
              endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
              attributes: decodeAttributes(s.attributes),
              status: { code: s.status?.code ?? 0, ...(s.status?.message && { message: s.status.message }) },
              events: (s.events ?? []).map((e) => ({ name: e.name, attributes: decodeAttributes(e.attributes) })),
              resource,
              scope: ss.scope?.name ?? '',
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const l of [...listeners]) l();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    waitFor: (pred, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        if (pred(spans)) return resolve(spans);
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for spans; have: ${spans.map((s) => s.name).join(', ') || 'none'}`));
        }, timeoutMs);
        const check = () => {
          if (!pred(spans)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve(spans);
        };
        listeners.add(check);
      }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
