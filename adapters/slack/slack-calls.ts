/**
 * The Web API client our own calls go through, and the one retry rule we allow.
 *
 * A 429 means Slack did not perform the call, so waiting `Retry-After` and sending it again can
 * never post twice. Anything else (a timeout, a reset connection) may have landed already, so a
 * write is never repeated; the WebClient's own retry loop is therefore off (retries: 0) and 429s
 * are surfaced to us (rejectRateLimitedCalls) instead of being retried inside it.
 */
import type { webApi } from '@slack/bolt';
import { ErrorCode, WebClient } from './bolt.js';
import { createKeepAliveFetch } from '../../src/basics/keep-alive-fetch.js';

export const SLACK_CALL_TIMEOUT_MS = 10_000;
/** Longest Retry-After we sit out in-process; beyond that the call fails with a clear error. */
const MAX_RETRY_AFTER_S = 60;
const MAX_RATE_LIMIT_WAITS = 3;

export function createOutboundClient(botToken: string, apiUrl: string | undefined, logger: webApi.Logger, timeoutMs = SLACK_CALL_TIMEOUT_MS): webApi.WebClient {
  return new WebClient(botToken, {
    slackApiUrl: normaliseApiUrl(apiUrl),
    timeout: timeoutMs,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger,
    // node:http with a keep-alive agent instead of the built-in fetch: three calls a reply (keep-alive-fetch.ts).
    fetch: createKeepAliveFetch(),
  });
}

/** Slack's base must end in `/` (the client appends the method name); accept it either way. */
export function normaliseApiUrl(apiUrl: string | undefined): string | undefined {
  if (apiUrl === undefined) return undefined;
  return apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`;
}

export function isRateLimited(err: unknown): err is webApi.WebAPIRateLimitedError {
  return err instanceof Error && (err as { code?: unknown }).code === ErrorCode.RateLimitedError;
}

export type Sleep = (ms: number) => Promise<void>;
const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `call`, waiting out 429s (bounded); every other failure is thrown as it is. */
export async function honouringRateLimits<T>(call: () => Promise<T>, sleep: Sleep = realSleep): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!isRateLimited(err) || attempt >= MAX_RATE_LIMIT_WAITS || err.retryAfter > MAX_RETRY_AFTER_S) throw err;
      await sleep(Math.max(err.retryAfter, 1) * 1000);
    }
  }
}

/** A short, secret-free description of a Web API failure for logs. */
export function describeSlackError(err: unknown): string {
  if (err instanceof Error) {
    const data = (err as { data?: { error?: unknown } }).data;
    const code = (err as { code?: unknown }).code;
    return typeof data?.error === 'string' ? `${String(code)}: ${data.error}` : `${String(code ?? err.name)}: ${err.message.slice(0, 200)}`;
  }
  return String(err);
}
