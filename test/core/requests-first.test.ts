import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpServer, type HttpServer } from '../../src/basics/http-server.js';
import { requestsFirst } from '../../src/basics/requests-first.js';

/**
 * requestsFirst: work that can wait, resumed in the same pass of the event loop that read several
 * requests, runs after all of them were answered. Real server and sockets on 127.0.0.1.
 */
let server: HttpServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.stop();
  server = undefined;
});

const N = 8;

/** Opens N connections, then writes a request on each in one synchronous run: the server reads them in one pass. */
async function burst(port: number, paths: (i: number) => string): Promise<void> {
  await Promise.all(
    Array.from({ length: N }, () => new Promise<void>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve());
      s.on('error', reject);
      s.on('data', () => undefined);
      sockets.push(s);
    })),
  );
  // Every connection is accepted by the server before the requests go out.
  await new Promise((r) => setTimeout(r, 50));
  sockets.forEach((s, i) => s.write(`GET ${paths(i)} HTTP/1.1\r\nHost: x\r\n\r\n`));
}

async function run(wait: () => Promise<void>): Promise<string[]> {
  const order: string[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  server = createHttpServer({ log: pino({ level: 'silent' }) });
  server.add({
    path: '/r',
    handle: async (req, res) => {
      const i = new URL(req.url ?? '', 'http://x').searchParams.get('i');
      res.end('ok');
      order.push(`answered ${i}`);
      await wait();
      order.push(`work ${i}`);
      if (order.length === 2 * N) done();
    },
  });
  await burst(await server.start(0, '127.0.0.1'), (i) => `/r?i=${i}`);
  await all;
  return order;
}

describe('requestsFirst', () => {
  it('runs the work after every request read in the same pass was answered, in the order it yielded', async () => {
    const order = await run(requestsFirst);
    const lastAnswer = Math.max(...order.map((e, i) => (e.startsWith('answered') ? i : -1)));
    const firstWork = order.findIndex((e) => e.startsWith('work'));
    expect(lastAnswer).toBeLessThan(firstWork);
    // First in, first out: the work resumes in the order the requests were answered.
    const answered = order.filter((e) => e.startsWith('answered')).map((e) => e.split(' ')[1]);
    const worked = order.filter((e) => e.startsWith('work')).map((e) => e.split(' ')[1]);
    expect(worked).toEqual(answered);
  });

  it('a microtask is no yield: without it, the first request\'s work runs before the second is read (the test can tell)', async () => {
    const order = await run(() => Promise.resolve());
    expect(order.slice(0, 2)).toEqual([order[0], `work ${order[0]!.split(' ')[1]}`]);
  });
});
