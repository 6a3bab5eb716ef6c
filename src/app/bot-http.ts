import { createHttpServer, type HttpRoute, type HttpServer } from '../basics/http-server.js';
import type { Logger } from '../basics/log.js';
import { dashboardRoute, type RequestHandler } from '../operations/dashboard/dashboard-route.js';

/**
 * The bot's one HTTP server on PORT, as main.ts runs it (and the tests that run the bot in
 * process). It runs when something needs it: Slack in HTTP mode (the adapter adds
 * `POST /slack/events` when it starts) or the dashboard (HERMES_DASHBOARD_TOKEN, `/dashboard…`).
 * Whenever it runs it answers `GET /healthz`: 200 once the bot is ready, 503 before.
 */
export function createBotHttp(opts: { log: Logger; isReady: () => boolean; dashboard?: { handle: RequestHandler } }): HttpServer {
  const server = createHttpServer({ log: opts.log.child({ component: 'http' }) });
  server.add(healthRoute(opts.isReady));
  if (opts.dashboard) server.add(dashboardRoute(opts.dashboard.handle));
  return server;
}

export function healthRoute(isReady: () => boolean): HttpRoute {
  return {
    path: '/healthz',
    methods: ['GET', 'HEAD'],
    handle(_req, res) {
      const ready = isReady();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' });
      res.end(ready ? 'ok' : 'starting');
    },
  };
}

/**
 * Where the server listens. Slack must reach `POST /slack/events`, so in Slack HTTP mode every
 * interface (as Bolt's own receiver did). With only the dashboard to serve, HERMES_DASHBOARD_HOST
 * (default 127.0.0.1): the sign-in form should not face every network the machine is on unless
 * the operator says so.
 */
export function listenHost(opts: { slackHttp: boolean; dashboardHost?: string }): string | undefined {
  return opts.slackHttp ? undefined : (opts.dashboardHost ?? '127.0.0.1');
}
