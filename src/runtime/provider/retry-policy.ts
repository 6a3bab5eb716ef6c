import OpenAI from 'openai';
import { ModelError } from './provider.js';
import { redactSecrets } from '../../basics/safety/secrets.js';

/**
 * Which failed model calls are worth repeating, and how long to wait first. Pure, so every rule is
 * unit-testable without a server. Waiting wrongly costs either the user's time (retrying a bad key)
 * or the provider's patience (ignoring retry-after), hence the split:
 * - retry: 408, 409, 429 (except an exhausted quota), 5xx, connection failures, empty answers;
 * - fail: everything that will fail again the same way (401, 403, 404, 400, 422, quota).
 * Timeouts and cancellations are decided by the caller, which knows which signal fired.
 */

export type Verdict =
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  | { kind: 'fail'; error: ModelError };

export interface ErrorContext {
  model: string;
  baseURL?: string;
  /** Removed from any server text we repeat, in case a server echoes it. */
  apiKey: string;
}

/** The longest we ever wait between attempts, whatever a server asks for. */
export const MAX_WAIT_MS = 30_000;
const BASE_DELAY_MS = 500;
const MAX_BACKOFF_MS = 8_000;

export function classifyError(err: unknown, ctx: ErrorContext): Verdict {
  if (err instanceof OpenAI.APIConnectionError) {
    return { kind: 'retry', reason: `connection failed: ${scrub(causeText(err), ctx)}` };
  }
  if (!(err instanceof OpenAI.APIError) || err.status === undefined) {
    const text = err instanceof Error ? err.message : String(err);
    return { kind: 'fail', error: new ModelError('transient', `Unexpected error talking to the model server: ${scrub(text, ctx)}`) };
  }
  const status = err.status;
  const detail = scrub(serverMessage(err), ctx);
  const where = ctx.baseURL ? ` at ${ctx.baseURL}` : '';
  if (status === 429 && (err.code === 'insufficient_quota' || err.type === 'insufficient_quota')) {
    return fail(`The model account's quota is exhausted (429 insufficient_quota): add credit to the account or use another OPENAI_API_KEY.`, status);
  }
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    return { kind: 'retry', reason: `${status} ${detail}`.trim(), retryAfterMs: retryAfterMs(err.headers) };
  }
  if (status === 413 || (status === 400 && TOO_LARGE.test(detail))) {
    return { kind: 'fail', error: new ModelError('too_large', `The model server${where} refused the request as too large (${status})${detail ? `: ${detail}` : ''}.`, status) };
  }
  if (status === 401) return fail(`The model server${where} rejected the API key (401); check OPENAI_API_KEY.`, status);
  if (status === 403) return fail(`The model server${where} refused access (403: ${detail || 'forbidden'}); check that OPENAI_API_KEY may use HERMES_MODEL "${ctx.model}".`, status);
  if (status === 404) return fail(`The model server${where} does not know model "${ctx.model}" or the URL is wrong (404: ${detail || 'not found'}); check HERMES_MODEL and OPENAI_BASE_URL.`, status);
  return fail(`The model server rejected the request (${status}): ${detail || 'no details given'}.`, status);
}

/** How OpenAI, vLLM, Ollama, llama.cpp and OpenRouter word "the prompt is longer than the model takes". */
const TOO_LARGE = /context[ _-]?length|context window|maximum context|too many tokens|too (long|large)|exceeds? the (max|limit)|reduce the length|prompt is too long|request entity/i;

function fail(message: string, status: number): Verdict {
  return { kind: 'fail', error: new ModelError('permanent', message, status) };
}

/**
 * Wait before retry number `attempt` (1-based): the server's retry-after if it gave one, else
 * exponential backoff with jitter so many sessions hit by the same outage do not retry in step.
 */
export function retryDelayMs(attempt: number, retryAfter: number | undefined, random: () => number = Math.random): number {
  if (retryAfter !== undefined) return Math.min(Math.max(0, retryAfter), MAX_WAIT_MS);
  const ceiling = Math.min(MAX_BACKOFF_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/** `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const after = headers.get('retry-after');
  if (after === null) return undefined;
  if (/^\d+(\.\d+)?$/.test(after.trim())) return Math.ceil(Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function serverMessage(err: InstanceType<typeof OpenAI.APIError>): string {
  const body = err.error;
  const inner = typeof body === 'object' && body !== null && 'message' in body ? (body as { message: unknown }).message : undefined;
  const text = typeof inner === 'string' && inner.trim() ? inner : '';
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function causeText(err: InstanceType<typeof OpenAI.APIConnectionError>): string {
  const cause = err.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    const deeper = cause.cause instanceof Error ? ((cause.cause as NodeJS.ErrnoException).code ?? cause.cause.message) : undefined;
    return code ?? deeper ?? cause.message;
  }
  return err.message;
}

export function scrub(text: string, ctx: Pick<ErrorContext, 'apiKey'>): string {
  return redactSecrets(text, [ctx.apiKey]);
}
