import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isDashboardPath, type RequestHandler } from './dashboard.js';

/**
 * The HTTP server for the dashboard when no other server runs on PORT (Discord only, Socket Mode,
 * the terminal chat). It serves /dashboard and /healthz (200 once `isReady()`), 404 elsewhere.
 * It binds one address (HERMES_DASHBOARD_HOST, default 127.0.0.1): the sign-in form should not face
 * every network the machine is on unless the operator says so.
 */
export interface DashboardServer {
  start(port: number, host: string): Promise<number>;
  stop(): Promise<void>;
}

export function createDashboardServer(handle: RequestHandler, isReady: () => boolean): DashboardServer {
  let server: Server | undefined;
  return {
    start(port, host) {
      const s = createServer((req, res) => {
        if (isDashboardPath(req.url)) return handle(req, res);
        if ((req.url ?? '').split('?')[0] === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
          const ready = isReady();
          res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' });
          res.end(ready ? 'ok' : 'starting');
          return;
        }
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found\n');
      });
      // Slow or idle clients cannot hold sockets open for ever.
      s.requestTimeout = 30_000;
      s.headersTimeout = 10_000;
      s.keepAliveTimeout = 5_000;
      server = s;
      return new Promise((resolve, reject) => {
        s.once('error', reject);
        // A deep accept queue, as for Slack's events (adapters/slack): a burst is queued, not dropped.
        s.listen({ port, host, backlog: 4096 }, () => {
          s.off('error', reject);
          resolve((s.address() as AddressInfo).port);
        });
      });
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
