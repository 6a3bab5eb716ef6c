import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkWebhookHeaders, encodeWebhookBody, sendWebhookTool } from '../../tools/send-webhook.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { netContext } from './net-helpers.js';

let web: FakeWeb;
beforeAll(async () => {
  web = await startFakeWeb();
});
afterAll(async () => {
  await web.close();
});
beforeEach(() => {
  web.setSink(200, '{"ok":true}');
});

const sinkRequests = () => web.received.filter((r) => r.path === '/sink');
const summaryOf = (r: Awaited<ReturnType<typeof sendWebhookTool.run>>) => (typeof r === 'string' ? r : r.summary);

describe('send_webhook', () => {
  it('declares approval by default and side effects', () => {
    expect(sendWebhookTool.needsApproval).toBe(true);
    expect(sendWebhookTool.sideEffects).toBe(true);
    expect(sendWebhookTool.category).toBe('network');
  });

  it('POSTs a JSON object and reports the status and a body excerpt', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`] });
    const out = summaryOf(await sendWebhookTool.run({ url: web.url('/sink'), body: { text: 'deploy done', n: 2 } }, ctx));
    expect(out).toBe(`Sent (POST json). HTTP 200 from 127.0.0.1:${web.port}: {"ok":true}`);
    const req = sinkRequests().at(-1);
    expect(req?.method).toBe('POST');
    expect(req?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(req?.body ?? '')).toEqual({ text: 'deploy done', n: 2 });
  });

  it('PUTs a form body from an object, and from a k=v string', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`] });
    await sendWebhookTool.run({ url: web.url('/sink'), method: 'PUT', format: 'form', body: { text: 'a b&c', n: 1, tags: ['x'] } }, ctx);
    let req = sinkRequests().at(-1);
    expect(req?.method).toBe('PUT');
    expect(req?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(req?.body))).toEqual({ text: 'a b&c', n: '1', tags: '["x"]' });
    await sendWebhookTool.run({ url: web.url('/sink'), format: 'form', body: 'text=hi+there&channel=ops' }, ctx);
    req = sinkRequests().at(-1);
    expect(Object.fromEntries(new URLSearchParams(req?.body))).toEqual({ text: 'hi there', channel: 'ops' });
  });

  it('a non-2xx answer is an error with the status and an excerpt of at most 300 chars', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`] });
    web.setSink(415, `Unsupported Media Type: send application/x-www-form-urlencoded. ${'x'.repeat(1000)}`);
    const err = await sendWebhookTool.run({ url: web.url('/sink'), body: { a: 1 } }, ctx).then(() => undefined, (e: Error) => e);
    expect(err?.message).toMatch(new RegExp(`^HTTP 415 from 127\\.0\\.0\\.1:${web.port}: Unsupported Media Type: send application/x-www-form-urlencoded\\. x+…$`));
    const excerpt = err?.message.split(': ').slice(1).join(': ') ?? '';
    expect(excerpt.length).toBeLessThanOrEqual(300);
    // The model adapts: the same call as a form succeeds once the sink accepts it.
    web.setSink(204, '');
    const out = summaryOf(await sendWebhookTool.run({ url: web.url('/sink'), body: { a: 1 }, format: 'form' }, ctx));
    expect(out).toBe(`Sent (POST form). HTTP 204 from 127.0.0.1:${web.port}`);
  });

  it('sends extra headers, refuses Host, Content-Length and hop-by-hop ones', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`] });
    await sendWebhookTool.run({ url: web.url('/sink'), body: { a: 1 }, headers: { 'X-Signature': 'abc', Authorization: 'Bearer t' } }, ctx);
    const req = sinkRequests().at(-1);
    expect(req?.headers['x-signature']).toBe('abc');
    expect(req?.headers.authorization).toBe('Bearer t');
    const count = sinkRequests().length;
    for (const name of ['Host', 'content-length', 'Connection', 'Transfer-Encoding', 'Upgrade', 'TE', 'Keep-Alive', 'Proxy-Authorization']) {
      await expect(sendWebhookTool.run({ url: web.url('/sink'), body: {}, headers: { [name]: 'x' } }, ctx)).rejects.toThrow(`header "${name}" cannot be set`);
    }
    await expect(sendWebhookTool.run({ url: web.url('/sink'), body: {}, headers: { 'X-A': 'a\r\nInjected: 1' } }, ctx)).rejects.toThrow(/line break/);
    await expect(sendWebhookTool.run({ url: web.url('/sink'), body: {}, headers: { 'Bad Name': 'a' } }, ctx)).rejects.toThrow(/not a valid HTTP header name/);
    expect(sinkRequests().length).toBe(count);
  });

  it('refuses two headers whose names differ only in case: the prompt would show both, and only one would be sent', async () => {
    const ctx = netContext({ allow: [`127.0.0.1:${web.port}`] });
    const count = sinkRequests().length;
    const headers = { 'X-Token': 'the value a person reads', 'x-token': 'the value that would be sent' };
    await expect(sendWebhookTool.check!({ url: web.url('/sink'), body: {}, headers }, ctx)).rejects.toThrow(/headers "X-Token" and "x-token" are the same header/);
    await expect(sendWebhookTool.run({ url: web.url('/sink'), body: {}, headers }, ctx)).rejects.toThrow(/same header/);
    expect(sinkRequests().length).toBe(count);
  });

  it('bodies that cannot be encoded as asked are clear errors for the model', () => {
    expect(() => encodeWebhookBody('hello there', 'json')).toThrow(/not valid JSON/);
    expect(() => encodeWebhookBody('just words', 'form')).toThrow(/k=v pairs/);
    expect(encodeWebhookBody('{"a":1}', 'json')).toEqual({ body: '{"a":1}', contentType: 'application/json' });
    expect(encodeWebhookBody('{"a":"b c"}', 'form')).toEqual({ body: 'a=b+c', contentType: 'application/x-www-form-urlencoded' });
    expect(checkWebhookHeaders({ 'X-Ok': 'v' })).toEqual({ 'x-ok': 'v' });
  });
});
