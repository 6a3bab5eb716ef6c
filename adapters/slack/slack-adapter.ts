/**
 * The Slack adapter: Bolt App + our outbound port, wired to the gateway.
 *
 * HTTP mode (signing secret): events, interactivity and `/hermes` all arrive at
 * `POST /slack/events` on `httpPort`; `GET /healthz` answers 200 once `isReady()`, else 503; with
 * `dashboard` given, everything under /dashboard goes to it (Bolt's custom routes).
 * Socket Mode (app token): Bolt holds a WebSocket to Slack and no HTTP server is opened.
 *
 * auth.test runs here, once, through our own client, so the scope header can be checked and a
 * bad token fails with the fix; Bolt then receives the bot ids and does not call it again.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPReceiver, SocketModeReceiver, type Logger as SlackLogger } from '@slack/bolt';
import type { Config } from '../../src/settings/config.js';
import type { Adapter, GatewayApi } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import type { Store } from '../../src/state/store/store.js';
import { createEventDedupe } from './event-dedupe.js';
import { createOutboundClient, normaliseApiUrl, SLACK_CALL_TIMEOUT_MS } from './slack-calls.js';
import { registerInbound } from './slack-inbound.js';
import { registerInteractions } from './slack-interactions.js';
import { toSlackLogger } from './slack-logger.js';
import { createSlackPort } from './slack-port.js';
import { checkScopes, EVENTS_REMINDER, identifyBot, SlackStartupError } from './startup-check.js';
import { createUserNames } from './user-names.js';
import { DurableApp } from './durable-app.js';
import type { ReceiptJournal } from '../../src/gateway/receipts.js';
import { createSlackReader } from './conversation-reader.js';
import { rejectSkewedRequests } from './request-age.js';
import { isDashboardPath, type RequestHandler } from '../../src/operations/dashboard/dashboard.js';

export interface SlackAdapterOptions {
  config: NonNullable<Config['slack']>;
  httpPort: number;
  gateway: GatewayApi;
  store: Store;
  /** Where request bodies are journaled before they are acknowledged (createReceiptJournal on the core's database). */
  receipts: ReceiptJournal;
  log: Logger;
  isReady: () => boolean;
  /** Retries of Bolt's own WebClient (used for nothing that posts); tests pass 0. */
  retries?: number;
  /** Timeout of one Web API call (default 10 s); tests shorten it. */
  callTimeoutMs?: number;
  /** Longest total wait for 429s while reading context (default 10 s); tests shorten it. */
  maxRateLimitWaitMs?: number;
  /** The clock request timestamps are checked against (default Date.now). */
  now?: () => number;
  /** The dashboard's handler (HERMES_DASHBOARD_TOKEN), served on the same server in HTTP mode. */
  dashboard?: RequestHandler;
}

export interface SlackAdapter extends Adapter {
  /** The port the HTTP server listens on once started (HTTP mode), else undefined. */
  listeningPort(): number | undefined;
}

export async function createSlackAdapter(opts: SlackAdapterOptions): Promise<SlackAdapter> {
  const { config, gateway, store, log } = opts;
  const slackLogger = toSlackLogger(log);
  const client = createOutboundClient(config.botToken, config.apiUrl, slackLogger, opts.callTimeoutMs);

  const identity = await identifyBot(client);
  const scopeReport = checkScopes(identity.scopes);
  for (const w of scopeReport.warnings) log.warn(w);
  if (scopeReport.errors.length) throw new SlackStartupError(scopeReport.errors.join('\n'));
  log.info({ team: identity.teamId, botUser: identity.botUserId }, `slack: token ok. ${EVENTS_REMINDER}`);

  const httpReceiver = config.appToken === undefined ? createHttpReceiver(opts, slackLogger) : undefined;
  const receiver = httpReceiver ?? createSocketReceiver(config, slackLogger);

  const app = new DurableApp({
    token: config.botToken,
    botId: identity.botId,
    botUserId: identity.botUserId,
    receiver,
    logger: slackLogger,
    ignoreSelf: true,
    clientOptions: {
      slackApiUrl: normaliseApiUrl(config.apiUrl),
      retryConfig: { retries: opts.retries ?? 2 },
      timeout: SLACK_CALL_TIMEOUT_MS,
    },
  }, opts.receipts, log);
  app.error(async (err) => {
    log.error({ err: { code: err.code, message: err.message } }, 'slack: Bolt reported an error');
  });

  const names = createUserNames(client, log);
  const reader = createSlackReader({ client, names, log, botUserId: identity.botUserId, botId: identity.botId, ...(opts.maxRateLimitWaitMs !== undefined && { maxRateLimitWaitMs: opts.maxRateLimitWaitMs }) });
  const port = createSlackPort({ client, log, reader, botToken: config.botToken, apiUrl: config.apiUrl });
  gateway.registerPort(port);
  const deps = { gateway, log, teamId: identity.teamId };
  registerInbound(app, { ...deps, dedupe: createEventDedupe(store, log), names, botUserId: identity.botUserId, botId: identity.botId });
  registerInteractions(app, { ...deps, client });

  let server: Server | undefined;
  let started = false;
  return {
    port,
    listeningPort: () => (server?.listening ? (server.address() as AddressInfo).port : undefined),
    async start() {
      if (started) return;
      if (httpReceiver) {
        // Node's default queue of 511 unaccepted connections overflowed under a burst of deliveries
        // (the kernel then drops the SYN and the sender retries a second later): ask for the most
        // the kernel allows (net.core.somaxconn caps it).
        server = await httpReceiver.start({ port: opts.httpPort, backlog: LISTEN_BACKLOG });
        log.info({ port: (server.address() as AddressInfo).port }, 'slack: listening for events on POST /slack/events');
      } else {
        await app.start();
        log.info('slack: connected in Socket Mode');
      }
      started = true;
      const replayed = await app.replayPending();
      if (replayed) log.info({ replayed }, 'slack: replayed requests acknowledged before a restart');
    },
    async stop() {
      if (!started) return;
      started = false;
      await app.stop().catch((err: unknown) => log.warn({ err }, 'slack: stop failed'));
      server = undefined;
    },
  };
}

const LISTEN_BACKLOG = 4096;

/** Events, interactivity and commands on one path, plus the health check on the same server. */
function createHttpReceiver(opts: SlackAdapterOptions, logger: SlackLogger): HTTPReceiver {
  const receiver = new HTTPReceiver({
    signingSecret: opts.config.signingSecret ?? '',
    endpoints: ['/slack/events'],
    port: opts.httpPort,
    logger,
    // Acknowledge as soon as a listener calls ack: DurableApp has written the body to the receipt
    // journal before Bolt sees it, so nothing acknowledged is only in memory.
    processBeforeResponse: false,
    customRoutes: [
      {
        path: '/healthz',
        method: ['GET'],
        handler: (_req, res) => {
          const ready = opts.isReady();
          res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' });
          res.end(ready ? 'ok' : 'starting');
        },
      },
      ...(opts.dashboard ? [{ path: '/dashboard{/*rest}', method: ['GET', 'HEAD', 'POST'], handler: opts.dashboard }] : []),
    ],
  });
  // Bolt calls this property for every request; our check runs first. Dashboard forms are not
  // Slack requests and carry no Slack timestamp.
  const inner = receiver.requestListener;
  const checked = rejectSkewedRequests(inner, opts.log, opts.now);
  receiver.requestListener = opts.dashboard ? (req, res) => (isDashboardPath(req.url) ? inner(req, res) : checked(req, res)) : checked;
  return receiver;
}

function createSocketReceiver(config: SlackAdapterOptions['config'], logger: SlackLogger): SocketModeReceiver {
  return new SocketModeReceiver({
    appToken: config.appToken ?? '',
    logger,
    // Bolt hands installerOptions.clientOptions to the Socket Mode client: the only way to point
    // apps.connections.open at SLACK_API_URL. No installer is created (no OAuth client id).
    installerOptions: { clientOptions: { slackApiUrl: normaliseApiUrl(config.apiUrl), timeout: SLACK_CALL_TIMEOUT_MS } },
  });
}
