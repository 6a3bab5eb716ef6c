import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRoute } from '../../basics/http-server.js';

/**
 * The dashboard's place on the bot's HTTP server, in a module of its own: src/app/bot-http.ts is
 * loaded at every start, and importing it from dashboard.ts loaded every page, the trace index and
 * the replay runner with it (an 80 KB chunk) in a bot without a dashboard.
 */

/** Where the dashboard's pages are. */
export const BASE = '/dashboard';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** /dashboard and everything below it, any method (the handler answers what it does not serve). */
export function dashboardRoute(handle: RequestHandler): HttpRoute {
  return { path: BASE, prefix: true, handle };
}
