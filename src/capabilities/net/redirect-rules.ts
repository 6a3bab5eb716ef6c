/**
 * What a redirect does to the next request. Pure, so the rules are tested without sockets.
 * Mirrors what browsers do (Fetch spec "HTTP-redirect fetch"), because servers are written for them:
 * 303 (and 301/302 after a POST) turn into a body-less GET; credentials never follow the request
 * to another origin, since the new origin may belong to someone else.
 */

export type Method = 'GET' | 'POST' | 'PUT';

export interface HopRequest {
  url: URL;
  method: Method;
  /** Lower-case names. */
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export const MAX_REDIRECTS = 5;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

// Cookie and Authorization are the obvious ones; API keys travel in many custom headers too.
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|auth|token|secret|api-?key|session|password|signature|credential/i;

const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];

export function isRedirect(status: number): boolean {
  return REDIRECT_STATUSES.has(status);
}

export function isCredentialHeader(name: string): boolean {
  return CREDENTIAL_HEADER.test(name);
}

/** The request to make after `status` with `location`, or an Error message for the model. */
export function followRedirect(prev: HopRequest, status: number, location: string): HopRequest | { error: string } {
  let url: URL;
  try {
    url = new URL(location, prev.url);
  } catch {
    return { error: `the server at ${prev.url.host} redirected to an invalid location` };
  }
  url.hash = '';
  const headers: Record<string, string> = { ...prev.headers };
  if (url.origin !== prev.url.origin) {
    for (const name of Object.keys(headers)) if (isCredentialHeader(name)) delete headers[name];
  }
  let method = prev.method;
  let body = prev.body;
  if ((status === 303 && method !== 'GET') || ((status === 301 || status === 302) && method === 'POST')) {
    method = 'GET';
    body = undefined;
    for (const name of BODY_HEADERS) delete headers[name];
  }
  return { url, method, headers, body };
}
