import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The local web one eval case sees: its fixed pages and a webhook sink at /sink, on 127.0.0.1
 * with an ephemeral port (the case reaches it through HERMES_NET_ALLOW). Nothing else answers.
 */

export interface SinkRequest {
  method: string;
  contentType: string;
  body: string;
}

export interface FixtureWeb {
  origin: string;
  /** host:port, for HERMES_NET_ALLOW. */
  hostPort: string;
  sink: SinkRequest[];
  close(): Promise<void>;
}

export interface FixturePage {
  body: string;
  type?: string;
  status?: number;
}

const MAX_BODY = 1024 * 1024;

export async function startFixtureWeb(opts: { pages: Record<string, string | FixturePage>; sink?: { status: number; body?: string } }): Promise<FixtureWeb> {
  const sink: SinkRequest[] = [];
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://fixture.invalid').pathname;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => {
      if (pathname === '/sink') {
        sink.push({ method: req.method ?? '', contentType: String(req.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') });
        const status = opts.sink?.status ?? 200;
        res.writeHead(status, { 'content-type': status < 400 ? 'application/json' : 'text/plain' });
        res.end(opts.sink?.body ?? (status < 400 ? '{"ok":true}' : `error ${status}`));
        return;
      }
      const page = opts.pages[pathname];
      if (page === undefined || req.method !== 'GET') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
        return;
      }
      const p = typeof page === 'string' ? { body: page } : page;
      const type = p.type ?? (/^\s*</.test(p.body) ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8');
      res.writeHead(p.status ?? 200, { 'content-type': type });
      res.end(p.body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    sink,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
