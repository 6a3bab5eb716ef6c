import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './log.js';

/**
 * The bot's one HTTP server on PORT. It knows no route of its own: whoever serves something
 * registers a route — the Slack adapter `POST /slack/events`, the dashboard `/dashboard…`, the app
 * `/healthz` — and the composition root (src/main.ts) decides whether the server runs and on which
 * address. A path no route claims is 404; a claimed path asked with another method is 405.
 */

export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface HttpRoute {
  /** The path this route serves: exactly, or with `prefix` also every path below it (`/dashboard/…`). */
  path: string;
  prefix?: boolean;
  /** Methods answered (default: any). Others get 405 with an Allow header. */
  methods?: readonly string[];
  handle: HttpHandler;
}

/** What a part of the bot sees of the server: a place to register its route. */
export interface HttpRoutes {
  /** Adds a route; the returned function removes it again. Two routes may not claim the same path. */
  add(route: HttpRoute): () => void;
}

export interface HttpServer extends HttpRoutes {
  /** Listens on `port` (0: any free port) at `host` (undefined: every interface); resolves the port. */
  start(port: number, host?: string): Promise<number>;
  /** The port while listening, else undefined. */
  port(): number | undefined;
  stop(): Promise<void>;
}

/**
 * Node's default queue of 511 unaccepted connections overflowed under a burst of Slack deliveries
 * (the kernel then drops the SYN and the sender retries a second later): ask for the most the
 * kernel allows (net.core.somaxconn caps it).
 */
const LISTEN_BACKLOG = 4096;

/** The part of a request URL routes are matched on: no query, no fragment. */
export function requestPath(url: string | undefined): string {
  return (url ?? '/').split(/[?#]/)[0]!;
}

function claims(route: HttpRoute, path: string): boolean {
  return path === route.path || (route.prefix === true && path.startsWith(`${route.path}/`));
}

export function createHttpServer(opts: { log: Logger }): HttpServer {
  const routes: HttpRoute[] = [];
  let server: Server | undefined;

  const dispatch = (req: IncomingMessage, res: ServerResponse): void => {
    const path = requestPath(req.url);
    const route = routes.find((r) => claims(r, path));
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
      return;
    }
    if (route.methods && !route.methods.includes(req.method ?? '')) {
      res.writeHead(405, { 'content-type': 'text/plain', allow: route.methods.join(', ') });
      res.end('method not allowed\n');
      return;
    }
    const failed = (err: unknown) => {
      opts.log.error({ err: (err as Error)?.message ?? String(err), path: route.path }, 'http: a request handler failed');
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      } else res.destroy();
    };
    try {
      const done = route.handle(req, res);
      if (done instanceof Promise) done.catch(failed);
    } catch (err) {
      failed(err);
    }
  };

  return {
    add(route) {
      const clash = routes.find((r) => r.path === route.path || claims(r, route.path) || claims(route, r.path));
      if (clash) throw new Error(`http: ${route.path} is already served by another route (${clash.path})`);
      routes.push(route);
      return () => {
        const i = routes.indexOf(route);
        if (i >= 0) routes.splice(i, 1);
      };
    },
    start(port, host) {
      if (server) return Promise.reject(new Error('http: the server is already started'));
      const s = createServer(dispatch);
      // Slow or idle clients cannot hold sockets open for ever. An idle keep-alive connection stays
      // open for 65 s (Node's default is 5 s; load balancers idle out at 60 s): a sender that posts
      // every few seconds, as Slack does to a busy bot, reuses its connection instead of making a new
      // one each time: in the 500-session bench two thirds of the requests had opened a new
      // connection, which took hundreds of ms under load (docs/performance.md, "Round 3: the Slack path").
      s.requestTimeout = 30_000;
      s.headersTimeout = 10_000;
      s.keepAliveTimeout = 65_000;
      server = s;
      return new Promise((resolve, reject) => {
        const refused = (err: Error) => {
          server = undefined;
          reject(err);
        };
        s.once('error', refused);
        s.listen({ port, ...(host !== undefined && { host }), backlog: LISTEN_BACKLOG }, () => {
          s.off('error', refused);
          resolve((s.address() as AddressInfo).port);
        });
      });
    },
    port: () => (server?.listening ? (server.address() as AddressInfo).port : undefined),
    async stop() {
      const s = server;
      server = undefined;
      if (!s?.listening) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
