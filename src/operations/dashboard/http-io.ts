import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Html } from './html.js';

/** Small request/response helpers for the dashboard's own handler (no framework). */

/**
 * Scripts and styles only from this server, nothing inline, no framing, no referrer: a value
 * that slipped past escaping still could not run.
 */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` on form posts, which the
  // Origin check must refuse.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

export function sendHtml(res: ServerResponse, status: number, page: Html, headers: Record<string, string | string[]> = {}): void {
  const body = Buffer.from(page.text, 'utf8');
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-length': String(body.length), ...headers });
  res.end(body);
}

export function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(text);
}

export function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(303, { ...SECURITY_HEADERS, location, ...headers });
  res.end();
}

export class BodyTooLarge extends Error {}

/** Reads an urlencoded form of at most `maxBytes`, waiting at most `timeoutMs`. */
export function readForm(req: IncomingMessage, maxBytes = 8192, timeoutMs = 10_000): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error('the form took too long to arrive'));
    }, timeoutMs);
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        clearTimeout(timer);
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge('form too large'));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

export function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

export function bearer(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  const m = h ? /^Bearer\s+(.+)$/i.exec(h) : null;
  return m ? m[1]!.trim() : undefined;
}

/** A POST from another site: an Origin header naming a different host (absent is allowed: SameSite and form tokens cover it). */
export function foreignOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true; // "null" or garbage
  }
}

/** HTTPS as the client sees it: TLS here, or a proxy in front saying so. */
export function isHttps(req: IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https';
}
