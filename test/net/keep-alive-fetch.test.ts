import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createKeepAliveFetch } from '../../src/basics/keep-alive-fetch.js';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); })));
});

async function serve(handler: Handler): Promise<string> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, Buffer.concat(chunks).toString(), res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The built-in fetch, counting what is handed to it. */
function countingFallback(): { fetch: typeof fetch; calls: number } {
  const box = { calls: 0, fetch: ((input: string | URL | Request, init?: RequestInit) => { box.calls++; return fetch(input, init); }) as typeof fetch };
  return box;
}

describe('createKeepAliveFetch', () => {
  it('sends the body and headers as fetch would, and answers with a real Response', async () => {
    let seen: { method?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
    const url = await serve((req, body, res) => {
      seen = { method: req.method, headers: req.headers, body };
      res.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-twice': ['a', 'b'] });
      res.end(JSON.stringify({ ok: true, echo: body.length }));
    });
    const fallback = countingFallback();
    const f = createKeepAliveFetch({ fallback: fallback.fetch });
    const headers = new Headers({ Authorization: 'Bearer k', 'X-One': '1' });
    const res = await f(`${url}/v1/chat`, { method: 'POST', headers, body: 'hé' });
    expect(res).toBeInstanceOf(Response);
    expect([res.status, res.statusText, res.ok]).toEqual([201, 'Made', true]);
    expect(res.headers.get('x-twice')).toBe('a, b');
    expect(await res.json()).toEqual({ ok: true, echo: 2 });
    expect(seen.method).toBe('POST');
    expect(seen.body).toBe('hé');
    expect(seen.headers).toMatchObject({ authorization: 'Bearer k', 'x-one': '1', 'content-type': 'text/plain;charset=UTF-8', 'content-length': '3' });
    expect(fallback.calls).toBe(0);
  });

  it('sends a form as Slack does (record headers, URLSearchParams) with its content type', async () => {
    const bodies: Array<[string | undefined, string]> = [];
    const url = await serve((req, body, res) => {
      bodies.push([req.headers['content-type'], body]);
      res.end('{"ok":true}');
    });
    const f = createKeepAliveFetch();
    await (await f(`${url}/chat.postMessage`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'channel=C1&text=hi' })).text();
    await (await f(new URL(`${url}/x`), { method: 'POST', body: new URLSearchParams({ a: '1 2' }) })).text();
    expect(bodies).toEqual([
      ['application/x-www-form-urlencoded', 'channel=C1&text=hi'],
      ['application/x-www-form-urlencoded;charset=UTF-8', 'a=1+2'],
    ]);
  });

  it('keeps the connection for the next request', async () => {
    const ports: number[] = [];
    const url = await serve((req, _body, res) => {
      ports.push(req.socket.remotePort!);
      res.end('ok');
    });
    const f = createKeepAliveFetch();
    for (let i = 0; i < 3; i++) expect(await (await f(url, { method: 'POST', body: 'x' })).text()).toBe('ok');
    expect(new Set(ports).size).toBe(1);
  });

  it('rejects with the signal’s reason when aborted while waiting, and closes the request', async () => {
    let closed: Promise<void> = Promise.resolve();
    const url = await serve((req) => {
      closed = new Promise((r) => req.socket.once('close', () => r()));
    });
    const f = createKeepAliveFetch();
    const ac = new AbortController();
    const pending = f(url, { method: 'POST', body: 'x', signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await closed;
    const timedOut = f(url, { method: 'POST', body: 'x', signal: AbortSignal.timeout(30) });
    await expect(timedOut).rejects.toMatchObject({ name: 'TimeoutError' });
    await expect(f(url, { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow('gone');
  });

  it('passes an event stream through as it arrives', async () => {
    let second: (() => void) | undefined;
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      second = () => res.end('data: two\n\n');
    });
    const f = createKeepAliveFetch();
    const res = await f(url, { method: 'POST', body: '{}' });
    const reader = res.body!.getReader();
    const first = await reader.read();
    // The first event is here while the server still holds the second.
    expect(Buffer.from(first.value!).toString()).toBe('data: one\n\n');
    second!();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(rest).toBe('data: two\n\n');
  });

  it('fails as fetch fails: a refused connection, an answer cut off, one too large', async () => {
    const f = createKeepAliveFetch({ maxBufferedBytes: 1000 });
    const refused = await serve(() => undefined);
    servers[0]!.close();
    await new Promise((r) => setTimeout(r, 20));
    await expect(f(refused, { method: 'POST', body: 'x' })).rejects.toMatchObject({ name: 'TypeError', message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
    const cut = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
      setTimeout(() => res.destroy(), 20);
    });
    await expect(f(cut, { method: 'POST', body: 'x' })).rejects.toMatchObject({ message: 'fetch failed' });
    const large = await serve((_req, _body, res) => res.end('x'.repeat(5000)));
    await expect(f(large, { method: 'POST', body: 'x' })).rejects.toMatchObject({ message: 'fetch failed' });
  });

  it('follows redirects through the built-in fetch, and refuses them with redirect: error', async () => {
    const url = await serve((req, _body, res) => {
      if (req.url === '/old') {
        res.writeHead(307, { location: '/new' });
        res.end();
      } else res.end(`at ${req.url}`);
    });
    const fallback = countingFallback();
    const f = createKeepAliveFetch({ fallback: fallback.fetch });
    expect(await (await f(`${url}/old`, { method: 'POST', body: 'x' })).text()).toBe('at /new');
    expect(fallback.calls).toBe(1);
    await expect(f(`${url}/old`, { method: 'POST', body: 'x', redirect: 'error' })).rejects.toMatchObject({ name: 'TypeError' });
    expect(fallback.calls).toBe(1);
  });

  it('leaves what it does not take on to the built-in fetch: form data, compressed answers, Request objects', async () => {
    const url = await serve((req, body, res) => res.end(`${req.headers['content-type']?.split(';')[0]} ${body.length > 0}`));
    const fallback = countingFallback();
    const f = createKeepAliveFetch({ fallback: fallback.fetch });
    const form = new FormData();
    form.append('file', new Blob(['abc']), 'a.txt');
    expect(await (await f(url, { method: 'POST', body: form })).text()).toBe('multipart/form-data true');
    await (await f(url, { headers: { 'Accept-Encoding': 'gzip' } })).text();
    await (await f(new Request(url))).text();
    expect(fallback.calls).toBe(3);
  });

  it('gives a bodiless status a null body', async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(204);
      res.end();
    });
    const res = await createKeepAliveFetch()(url, { method: 'DELETE' });
    expect([res.status, res.body]).toEqual([204, null]);
  });
});
