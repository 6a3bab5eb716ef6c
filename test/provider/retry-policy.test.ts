import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { classifyError, MAX_WAIT_MS, retryAfterMs, retryDelayMs } from '../../src/runtime/provider/retry-policy.js';

const ctx = { model: 'm', apiKey: 'sk-abcdefghijkl' };
const apiError = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  OpenAI.APIError.generate(status, { error: body }, undefined, new Headers(headers));

describe('retryAfterMs', () => {
  it('prefers retry-after-ms, then seconds, then an HTTP date', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }))).toBe(1500);
    expect(retryAfterMs(new Headers({ 'retry-after': '2.5' }))).toBe(2500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), now)).toBe(7000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  it('honours and caps the server wait', () => {
    expect(retryDelayMs(1, 1200)).toBe(1200);
    expect(retryDelayMs(1, 10 * 60_000)).toBe(MAX_WAIT_MS);
  });
  it('grows exponentially with jitter between half and the full step, up to 8 s', () => {
    expect([1, 2, 3].map((a) => retryDelayMs(a, undefined, () => 0))).toEqual([250, 500, 1000]);
    expect([1, 2, 3].map((a) => retryDelayMs(a, undefined, () => 1))).toEqual([500, 1000, 2000]);
    expect(retryDelayMs(20, undefined, () => 1)).toBe(8000);
  });
});

describe('classifyError', () => {
  it('retries rate limits, conflicts, timeouts and server errors, carrying retry-after', () => {
    for (const status of [408, 409, 429, 500, 502, 503, 529]) {
      expect(classifyError(apiError(status, { message: 'x' }), ctx).kind).toBe('retry');
    }
    expect(classifyError(apiError(429, { message: 'slow' }, { 'retry-after': '3' }), ctx)).toMatchObject({ kind: 'retry', retryAfterMs: 3000 });
  });
  it('fails permanently on auth, permission, missing model, bad request and quota', () => {
    for (const status of [400, 401, 403, 404, 422]) {
      const v = classifyError(apiError(status, { message: 'no' }), ctx);
      expect(v.kind === 'fail' && v.error.kind).toBe('permanent');
    }
    const quota = classifyError(apiError(429, { message: 'quota', code: 'insufficient_quota' }), ctx);
    expect(quota.kind === 'fail' && quota.error.message).toMatch(/quota is exhausted/);
  });
  it('retries connection errors and scrubs the key from server text', () => {
    expect(classifyError(new OpenAI.APIConnectionError({ message: 'Connection error.' }), ctx).kind).toBe('retry');
    const v = classifyError(apiError(400, { message: 'bad key sk-abcdefghijkl here' }), ctx);
    expect(v.kind === 'fail' && v.error.message).toBe('The model server rejected the request (400): bad key [redacted] here.');
  });
});
