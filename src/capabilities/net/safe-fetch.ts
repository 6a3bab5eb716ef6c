import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Logger } from 'pino';
import { NetRefusedError, type NetClient, type NetRequest, type NetResponse } from './net-client.js';
import { checkHost, checkResolved, parseAllowList, parseIpLiteral, type AllowEntry } from './address-policy.js';
import { readBody } from './read-body.js';
import { MAX_REDIRECTS, followRedirect, isRedirect, type HopRequest } from './redirect-rules.js';

/**
 * The only way tools reach the network. Each hop: check the URL, resolve the name once, check
 * every address, then connect to the checked address (our own `lookup` hands it to the socket),
 * so a DNS answer that changes between check and connect (rebinding) cannot redirect us.
 */

export type LookupFn = (host: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

export interface NetClientOptions {
  /** HERMES_NET_ALLOW entries: `host` or `host:port`. */
  allow: string[];
  log: Logger;
  /** Name resolution; default dns.promises.lookup(all). Tests map fake names here. */
  lookup?: LookupFn;
  defaultTimeoutMs?: number;
  /** Default cap on the decompressed body. */
  maxBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;

/** Every address here passed the policy; the socket may use any of them (happy eyeballs). */
type Target = Array<{ address: string; family: 4 | 6 }>;

const systemLookup: LookupFn = async (host) => {
  const found = await dns.promises.lookup(host, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

function refuse(log: Logger, host: string, reason: string): never {
  log.info({ host, reason }, 'network request refused');
  throw new NetRefusedError(reason);
}

/** Rejects as soon as the signal fires, so a hung DNS lookup cannot outlive the request's time cap. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function flattenHeaders(raw: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

export function createNetClient(opts: NetClientOptions): NetClient {
  const allow: AllowEntry[] = parseAllowList(opts.allow);
  const lookup = opts.lookup ?? systemLookup;
  const log = opts.log;

  async function resolveTarget(url: URL, signal: AbortSignal): Promise<Target> {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      refuse(log, url.host, `refused: only http and https URLs can be fetched (this one is ${url.protocol.slice(0, 20)})`);
    }
    if (url.username || url.password) {
      refuse(log, url.host, 'refused: URLs with a user name or password (user:pass@host) are not fetched; pass credentials in a header instead');
    }
    const port = portOf(url);
    const first = checkHost(url.hostname, port, allow);
    if (!first.ok) refuse(log, url.host, first.reason);
    const literal = parseIpLiteral(url.hostname);
    if (literal) return [literal];
    let addresses: Array<{ address: string; family: 4 | 6 }>;
    try {
      addresses = await raceAbort(lookup(url.hostname), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`could not resolve ${url.hostname}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const verdict = checkResolved(url.hostname, port, addresses.map((a) => a.address), allow);
    if (!verdict.ok) refuse(log, url.host, verdict.reason);
    return addresses.map((a) => ({ address: a.address, family: a.family }));
  }

  function send(hop: HopRequest, target: Target, signal: AbortSignal): Promise<{ res: http.IncomingMessage; close: () => void }> {
    const { url } = hop;
    const literal = parseIpLiteral(url.hostname);
    const first = target[0] ?? { address: '', family: 4 };
    // The socket gets the checked addresses; Host and SNI keep the name the URL used.
    const pinned: LookupFunction = (_host, options, cb) => {
      if (options.all) cb(null, target);
      else cb(null, first.address, first.family);
    };
    const headers: Record<string, string> = { ...hop.headers, host: url.host };
    if (hop.body !== undefined) headers['content-length'] = String(Buffer.byteLength(hop.body));
    const options: https.RequestOptions = {
      method: hop.method,
      host: literal ? literal.address : url.hostname,
      port: portOf(url),
      path: `${url.pathname}${url.search}`,
      headers,
      agent: false,
      lookup: pinned,
      ...(url.protocol === 'https:' && !literal ? { servername: url.hostname } : {}),
    };
    return new Promise((resolve, reject) => {
      let req: http.ClientRequest;
      try {
        req = (url.protocol === 'https:' ? https : http).request(options);
      } catch (err) {
        // Node validates header names and values synchronously (CR/LF, non-token names).
        reject(new Error(`the request could not be built: ${(err as Error).message}`));
        return;
      }
      const close = () => {
        signal.removeEventListener('abort', onAbort);
        req.destroy();
      };
      const onAbort = () => {
        req.destroy();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res) => {
        res.on('close', () => signal.removeEventListener('abort', onAbort));
        signal.addEventListener('abort', () => res.destroy(), { once: true });
        resolve({ res, close });
      });
      req.on('error', (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(signal.aborted ? signal.reason : new Error(`could not reach ${url.host}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      });
      req.end(hop.body);
    });
  }

  async function check(rawUrl: string, signal?: AbortSignal): Promise<void> {
    const url = parseUrl(rawUrl);
    const timeout = AbortSignal.timeout(opts.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS);
    await resolveTarget(url, signal ? AbortSignal.any([signal, timeout]) : timeout);
  }

  async function request(req: NetRequest): Promise<NetResponse> {
    const timeoutMs = req.timeoutMs ?? opts.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxBytes = req.maxBytes ?? opts.maxBytes ?? DEFAULT_MAX_BYTES;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const url = parseUrl(req.url);
    const headers: Record<string, string> = { 'user-agent': 'hermes-agent', 'accept-encoding': 'gzip, deflate, br' };
    for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v;
    let hop: HopRequest = { url, method: req.method ?? 'GET', headers, body: req.body };

    try {
      for (let redirects = 0; ; redirects++) {
        const target = await resolveTarget(hop.url, signal);
        const { res, close } = await send(hop, target, signal);
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        log.debug({ host: hop.url.host, status, redirects }, 'network response');
        if (isRedirect(status) && location && hop.body !== undefined) {
          // A request with a body was approved (or written) for this URL only: never resend it elsewhere.
          close();
          throw new Error(redirectNotFollowed(hop.url, status, location));
        }
        if (isRedirect(status) && location) {
          close();
          if (redirects >= MAX_REDIRECTS) {
            refuse(log, hop.url.host, `refused: more than ${MAX_REDIRECTS} redirects (stopped at ${hop.url.host})`);
          }
          const next = followRedirect(hop, status, location);
          if ('error' in next) throw new Error(next.error);
          hop = next;
          continue;
        }
        const contentType = String(res.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
        if (req.acceptTypes && !req.acceptTypes.some((t) => contentType.startsWith(t.toLowerCase()))) {
          close();
          refuse(
            log,
            hop.url.host,
            `refused: ${hop.url.host} answered with content type "${contentType || 'none'}", which this tool does not read (it reads ${req.acceptTypes.join(', ')})`,
          );
        }
        const { body, truncated } = await readBody(res, maxBytes, close);
        close();
        return { status, url: hop.url.toString(), headers: flattenHeaders(res.headers), body, truncated };
      }
    } catch (err) {
      if (err instanceof NetRefusedError) throw err;
      if (timeout.aborted) throw new Error(`timed out after ${timeoutMs} ms (${hop.url.host})`);
      if (req.signal?.aborted) throw new Error(`the request to ${hop.url.host} was cancelled`);
      throw err;
    }
  }

  return { request, check };
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new NetRefusedError(`refused: "${raw.slice(0, 200)}" is not a valid absolute URL (use http:// or https://)`);
  }
  url.hash = '';
  return url;
}

/** Model-facing: what happened to a request with a body that the server redirected. */
export function redirectNotFollowed(from: URL, status: number, location: string): string {
  let target = location.slice(0, 500);
  try {
    target = new URL(location, from).toString().slice(0, 500);
  } catch {
    // keep the raw header text
  }
  return `${from.host} answered HTTP ${status}, redirecting to ${target}. A request with a body is only ever sent to the URL it was made (and approved) for, so the redirect was not followed and nothing was sent to ${target}. If that URL is right, make a new call to it (it will be shown for approval again).`;
}
