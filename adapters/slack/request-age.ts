import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../src/basics/log.js';

/**
 * Slack signs `v0:<timestamp>:<body>`, so a captured request stays validly signed forever; the
 * timestamp is what makes a replay go stale. Bolt rejects timestamps older than 5 minutes but
 * accepts any in the future, so a request dated ahead (a skewed clock, or one prepared for a later
 * replay) would be accepted for as long as its date lies ahead. We allow 5 minutes either way.
 */
export const MAX_SKEW_S = 300;

/** True when the x-slack-request-timestamp header is a number within MAX_SKEW_S of now. */
export function timestampFresh(header: string | string[] | undefined, nowMs: number): boolean {
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined || !/^\d{1,12}$/.test(raw.trim())) return false;
  return Math.abs(nowMs / 1000 - Number(raw)) <= MAX_SKEW_S;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Wraps the receiver's request listener: POSTs dated too far from now get 401 before Bolt sees them. */
export function rejectSkewedRequests(inner: Listener, log: Logger, now: () => number = Date.now): Listener {
  return (req, res) => {
    if (req.method === 'POST' && !timestampFresh(req.headers['x-slack-request-timestamp'], now())) {
      log.warn({ timestamp: String(req.headers['x-slack-request-timestamp']).slice(0, 20) }, 'slack: refused a request dated more than 5 minutes from now (replayed or clock skew)');
      res.writeHead(401, { 'content-type': 'text/plain' });
      res.end('request timestamp out of range');
      return;
    }
    inner(req, res);
  };
}
