/**
 * A `fetch` for the SDKs' calls on the answer path (the openai SDK, Slack's WebClient), over
 * node:http with a keep-alive agent instead of Node's built-in fetch.
 *
 * Why: a bot's reply is one model call and three Slack calls. Node 20's fetch turns every request
 * body into a web stream written chunk by chunk (a `writev` per request, a transferable
 * AbortSignal and a ReadableStream per side); in the bot's profile at 500 sessions undici, its
 * streams and their socket writes were about a fifth of the busy CPU. node:http writes the
 * headers and the body in one write and parses the answer in C.
 *
 * What it takes on: http(s) URLs with a string, bytes or URLSearchParams body (what both SDKs
 * send). Anything else — a `Request` object, FormData or a stream body (file uploads), a caller
 * asking for compressed answers — goes to the built-in fetch unchanged. The answer is buffered
 * (bounded) and handed over as a real `Response`, except an event stream, which is passed through
 * as it arrives (streamed model answers). Semantics kept from fetch: the caller's signal aborts
 * the request and the promise rejects with the signal's reason; a network failure rejects with
 * `TypeError('fetch failed')` and the cause; `redirect: 'error'` rejects on a redirect, and a
 * redirect to be followed is sent again through the built-in fetch, which follows it.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

/** Free sockets are closed after this (or the server's own Keep-Alive hint, less a second), as undici does. */
const IDLE_SOCKET_MS = 4_000;
/** A buffered answer larger than this is refused (the SDKs' answers are a few KB). */
const MAX_BUFFERED_BYTES = 64 * 2 ** 20;
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

export interface KeepAliveFetchOptions {
  /** Where the requests this fetch does not take on go; default `globalThis.fetch`. */
  fallback?: typeof fetch;
  idleSocketMs?: number;
  maxBufferedBytes?: number;
}

export function createKeepAliveFetch(opts: KeepAliveFetchOptions = {}): typeof fetch {
  const fallback = opts.fallback ?? globalThis.fetch;
  const idle = opts.idleSocketMs ?? IDLE_SOCKET_MS;
  const maxBytes = opts.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  const agents = {
    'http:': new http.Agent({ keepAlive: true, timeout: idle, scheduling: 'lifo' }),
    'https:': new https.Agent({ keepAlive: true, timeout: idle, scheduling: 'lifo' }),
  };

  const leanFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? safeUrl(input) : input instanceof URL ? input : undefined;
    const body = url && (url.protocol === 'http:' || url.protocol === 'https:') ? plainBody(init?.body) : undefined;
    const headers = body !== undefined ? plainHeaders(init?.headers) : undefined;
    if (!url || body === undefined || headers === undefined || 'accept-encoding' in headers) return fallback(input, init);
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (body.contentType && !('content-type' in headers)) headers['content-type'] = body.contentType;
    if (body.bytes !== null) headers['content-length'] = String(body.bytes.byteLength);
    const method = (init?.method ?? 'GET').toUpperCase();
    const redirect = init?.redirect ?? 'follow';
    const client = url.protocol === 'https:' ? https : http;

    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const fail = (err: unknown): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      const succeed = (response: Response): void => {
        if (settled) return;
        settled = true;
        resolve(response);
      };
      const onAbort = (): void => {
        const reason = abortReason(signal!);
        req.destroy();
        fail(reason);
      };
      const req = client.request(url, { method, headers, agent: agents[url.protocol as 'http:' | 'https:'] }, (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400 && res.headers.location && redirect !== 'manual') {
          res.resume();
          if (redirect === 'error') return fail(new TypeError('fetch failed', { cause: new Error(`redirect to ${res.headers.location} refused (redirect: 'error')`) }));
          signal?.removeEventListener('abort', onAbort);
          settled = true;
          fallback(input, init).then(resolve, reject);
          return;
        }
        const responseHeaders = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const responseInit: ResponseInit = { status, statusText: res.statusMessage ?? '', headers: responseHeaders };
        const respond = (body: BodyInit | null): void => {
          try {
            succeed(new Response(body, responseInit));
          } catch (err) {
            // A status the Response constructor refuses (outside 200-599): fetch fails the same way.
            req.destroy();
            fail(new TypeError('fetch failed', { cause: err }));
          }
        };
        // The connection closed before the answer ended (a buffered answer has settled by then).
        res.once('close', () => {
          if (!res.complete) fail(new TypeError('fetch failed', { cause: new Error('the connection closed before the answer ended') }));
        });
        if (NULL_BODY_STATUSES.has(status) || method === 'HEAD') {
          res.resume();
          signal?.removeEventListener('abort', onAbort);
          return respond(null);
        }
        if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          // Streamed as it comes; the caller's signal still ends it (onAbort destroys the request,
          // which errors the stream) until the stream is done.
          res.once('close', () => signal?.removeEventListener('abort', onAbort));
          return respond(Readable.toWeb(res) as ReadableStream<Uint8Array>);
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.byteLength;
          if (size > maxBytes) {
            req.destroy();
            fail(new TypeError('fetch failed', { cause: new Error(`answer larger than ${maxBytes} bytes`) }));
            return;
          }
          chunks.push(chunk);
        });
        res.once('end', () => {
          signal?.removeEventListener('abort', onAbort);
          const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
          respond(new Uint8Array(all.buffer as ArrayBuffer, all.byteOffset, all.byteLength));
        });
        res.once('error', (err) => fail(new TypeError('fetch failed', { cause: err })));
      });
      req.once('error', (err) => fail(new TypeError('fetch failed', { cause: err })));
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(body.bytes ?? undefined);
    });
  };
  return leanFetch as typeof fetch;
}

interface PlainBody {
  bytes: Buffer | null;
  /** What fetch would have set as the content type for this kind of body. */
  contentType?: string;
}

/** The bodies node:http can send as they are; undefined: leave the request to the built-in fetch. */
function plainBody(body: RequestInit['body']): PlainBody | undefined {
  if (body === undefined || body === null) return { bytes: null };
  if (typeof body === 'string') return { bytes: Buffer.from(body), contentType: 'text/plain;charset=UTF-8' };
  if (body instanceof URLSearchParams) return { bytes: Buffer.from(body.toString()), contentType: 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (body instanceof Uint8Array) return { bytes: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(body) };
  return undefined;
}

/** Header names lower-cased, repeated values joined as fetch joins them; undefined for a shape we do not read. */
function plainHeaders(headers: RequestInit['headers']): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const add = (name: string, value: string): void => {
    const key = name.toLowerCase();
    out[key] = key in out ? `${out[key]}, ${value}` : value;
  };
  if (headers === undefined || headers === null) return out;
  if (headers instanceof Headers) {
    headers.forEach((value, name) => add(name, value));
    return out;
  }
  if (Array.isArray(headers)) {
    for (const pair of headers) {
      if (pair.length !== 2) return undefined;
      add(pair[0]!, pair[1]!);
    }
    return out;
  }
  if (typeof headers === 'object') {
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) add(name, String(value));
    return out;
  }
  return undefined;
}

function safeUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** fetch rejects with the signal's reason, or an AbortError when it has none. */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
