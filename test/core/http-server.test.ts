import { Agent, request } from 'node:http';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpServer, type HttpServer } from '../../src/basics/http-server.js';

/** The one HTTP server's routing, on a real server on 127.0.0.1. */
let server: HttpServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const text = (body: string) => (_req: unknown, res: import('node:http').ServerResponse) => void res.end(body);

describe('the bot\'s HTTP server', () => {
  it('sends each path to the route that claims it: exact or prefix, 404 for none, 405 for another method', async () => {
    server = createHttpServer({ log: pino({ level: 'silent' }) });
    server.add({ path: '/healthz', methods: ['GET', 'HEAD'], handle: text('health') });
    server.add({ path: '/dashboard', prefix: true, handle: text('dash') });
    const base = `http://127.0.0.1:${await server.start(0, '127.0.0.1')}`;
    expect(server.port()).toBe(Number(new URL(base).port));
    expect(await (await fetch(`${base}/healthz?x=1`)).text()).toBe('health');
    expect(await (await fetch(`${base}/dashboard`)).text()).toBe('dash');
    expect(await (await fetch(`${base}/dashboard/turns/1`)).text()).toBe('dash');
    expect((await fetch(`${base}/dashboardx`)).status).toBe(404);
    expect((await fetch(`${base}/healthz/more`)).status).toBe(404);
    const post = await fetch(`${base}/healthz`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('keeps an idle connection open for 65 s and says so, so a sender posting every few seconds reuses it', async () => {
    server = createHttpServer({ log: pino({ level: 'silent' }) });
    server.add({ path: '/slack/events', methods: ['POST'], handle: text('ok') });
    const base = `http://127.0.0.1:${await server.start(0, '127.0.0.1')}`;
    const sockets = new Set<unknown>();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = () =>
      new Promise<{ keepAlive: string | undefined }>((resolve, reject) => {
        const req = request(`${base}/slack/events`, { method: 'POST', agent }, (res) => {
          sockets.add(res.socket);
          res.resume().on('end', () => resolve({ keepAlive: res.headers['keep-alive'] as string | undefined }));
        });
        req.on('error', reject).end('{}');
      });
    try {
      expect((await post()).keepAlive).toBe('timeout=65');
      await post();
      // Both requests went over one connection.
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  it('refuses a second route on a claimed path, and frees the path when a route is removed', async () => {
    server = createHttpServer({ log: pino({ level: 'silent' }) });
    const remove = server.add({ path: '/slack/events', handle: text('one') });
    expect(() => server!.add({ path: '/slack/events', handle: text('two') })).toThrow(/already served/);
    server.add({ path: '/dashboard', prefix: true, handle: text('dash') });
    expect(() => server!.add({ path: '/dashboard/x', handle: text('x') })).toThrow(/already served/);
    const base = `http://127.0.0.1:${await server.start(0, '127.0.0.1')}`;
    expect(await (await fetch(`${base}/slack/events`)).text()).toBe('one');
    remove();
    expect((await fetch(`${base}/slack/events`)).status).toBe(404);
    server.add({ path: '/slack/events', handle: text('two') });
    expect(await (await fetch(`${base}/slack/events`)).text()).toBe('two');
  });

  it('answers 500 when a handler throws or rejects, and keeps serving', async () => {
    const logged: string[] = [];
    server = createHttpServer({ log: pino({ level: 'error' }, { write: (s: string) => void logged.push(s) }) });
    server.add({ path: '/throws', handle: () => { throw new Error('boom'); } });
    server.add({ path: '/rejects', handle: async () => { throw new Error('later boom'); } });
    server.add({ path: '/ok', handle: text('ok') });
    const base = `http://127.0.0.1:${await server.start(0, '127.0.0.1')}`;
    expect((await fetch(`${base}/throws`)).status).toBe(500);
    expect((await fetch(`${base}/rejects`)).status).toBe(500);
    expect(await (await fetch(`${base}/ok`)).text()).toBe('ok');
    expect(logged.join('')).toMatch(/boom[\s\S]*later boom/);
  });

  it('rejects a taken port with the listener\'s error (EADDRINUSE) and can start again after', async () => {
    server = createHttpServer({ log: pino({ level: 'silent' }) });
    const port = await server.start(0, '127.0.0.1');
    const second = createHttpServer({ log: pino({ level: 'silent' }) });
    await expect(second.start(port, '127.0.0.1')).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(second.port()).toBeUndefined();
    await server.stop();
    expect(await second.start(port, '127.0.0.1')).toBe(port);
    await second.stop();
  });
});
