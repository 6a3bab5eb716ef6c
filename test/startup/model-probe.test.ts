import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeModel, probeWarning, type ProbeOptions } from '../../src/runtime/provider/model-probe.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { modelFailed } from '../../src/gateway/user-messages.js';
import { ModelError } from '../../src/runtime/provider/provider.js';

/** The start-up look at the model server, against the fake OpenAI server and a dead port. */

let fake: FakeOpenAI;
let deadUrl: string;
let silent: http.Server;
let silentUrl: string;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: FAKE_OPENAI_KEY, models: ['qwen2.5:7b', 'llama3.2:3b'] });
  // A port that was free a moment ago: nothing listens there.
  const probe = http.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/v1`;
  await new Promise<void>((r) => probe.close(() => r()));
  // A server that accepts and never answers.
  silent = http.createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await fake.close();
  silent.closeAllConnections();
  await new Promise<void>((r) => silent.close(() => r()));
});

async function warn(opts: ProbeOptions) {
  const result = await probeModel(opts);
  return { result, warning: probeWarning(result, opts) };
}

describe('start-up model probe', () => {
  it('is quiet when the server knows the key and the model', async () => {
    const { result, warning } = await warn({ baseURL: fake.url, apiKey: FAKE_OPENAI_KEY, model: 'qwen2.5:7b' });
    expect(result).toEqual({ kind: 'ok' });
    expect(warning).toBeUndefined();
  });

  it('names OPENAI_BASE_URL when nothing answers there', async () => {
    const { result, warning } = await warn({ baseURL: deadUrl, apiKey: '', model: 'x' });
    expect(result.kind).toBe('unreachable');
    expect(warning).toMatch(/not reachable at http:\/\/127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\): check OPENAI_BASE_URL/);
  });

  it('gives up after its time limit on a server that never answers', async () => {
    const started = Date.now();
    const { result, warning } = await warn({ baseURL: silentUrl, apiKey: '', model: 'x', timeoutMs: 300 });
    expect(result).toEqual({ kind: 'unreachable', reason: 'no answer within the probe time limit' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(warning).toMatch(/OPENAI_BASE_URL/);
  });

  it('names OPENAI_API_KEY when the key is refused, without showing the key', async () => {
    const wrong = `${FAKE_OPENAI_KEY}-wrong`;
    const { result, warning } = await warn({ baseURL: fake.url, apiKey: wrong, model: 'qwen2.5:7b' });
    expect(result).toEqual({ kind: 'key_refused', status: 401 });
    expect(warning).toMatch(/refused the API key \(HTTP 401\): check OPENAI_API_KEY/);
    expect(warning).not.toContain(wrong);
    const none = await warn({ baseURL: fake.url, apiKey: '', model: 'qwen2.5:7b' });
    expect(none.warning).toMatch(/wants an API key \(HTTP 401\): set OPENAI_API_KEY/);
  });

  it('names HERMES_MODEL when the server does not list the model', async () => {
    const { result, warning } = await warn({ baseURL: fake.url, apiKey: FAKE_OPENAI_KEY, model: 'gpt-4o-mini' });
    expect(result).toEqual({ kind: 'model_unknown', available: ['qwen2.5:7b', 'llama3.2:3b'] });
    expect(warning).toBe(`model server at ${fake.url} does not list HERMES_MODEL="gpt-4o-mini" (it has: qwen2.5:7b, llama3.2:3b): check HERMES_MODEL.`);
  });

  it('points at the /v1 suffix when the URL has no /models', async () => {
    const { result, warning } = await warn({ baseURL: fake.url.replace(/\/v1$/, ''), apiKey: FAKE_OPENAI_KEY, model: 'x' });
    expect(result.kind).toBe('not_found');
    expect(warning).toMatch(/OPENAI_BASE_URL .*\/v1/);
  });
});

describe('the model error a person reads', () => {
  it('is one sentence: no nesting, nothing said twice', () => {
    const transient = modelFailed(new ModelError('transient', 'The model server did not answer after 3 attempts; last error: connection failed: ECONNREFUSED.', undefined, 'connection failed: ECONNREFUSED'));
    expect(transient).toBe('The language model is not answering right now (connection failed: ECONNREFUSED); please try again in a minute.');
    const permanent = modelFailed(new ModelError('permanent', 'The model server at http://x/v1 rejected the API key (401); check OPENAI_API_KEY.', 401));
    expect(permanent).toBe('I could not get an answer from the language model: the model server at http://x/v1 rejected the API key (401); check OPENAI_API_KEY.');
    for (const text of [transient, permanent]) {
      expect(text.match(/\(/g)?.length ?? 0).toBeLessThanOrEqual(1);
      expect(text.match(/minute/g)?.length ?? 0).toBeLessThanOrEqual(1);
      expect(text).not.toMatch(/\.\./);
    }
  });
});
