/**
 * The Slack adapter: Bolt App + our outbound port, wired to the gateway.
 *
 * HTTP mode (signing secret): events, interactivity and `/hermes` all arrive at
 * `POST /slack/events`, a route the adapter adds to the bot's one HTTP server (`http`) when it
 * starts and removes when it stops; the server, its port and `/healthz` belong to the composition
 * root. Socket Mode (app token): Bolt holds a WebSocket to Slack and adds no route.
 *
 * auth.test runs here, once, through our own client, so the scope header can be checked and a
 * bad token fails with the fix; Bolt then receives the bot ids and does not call it again.
 */
import type { Logger as SlackLogger } from '@slack/bolt';
import { SocketModeReceiver } from './bolt.js';
import type { Config } from '../../src/settings/config.js';
import type { Adapter, GatewayApi } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import type { OpenedDatabase } from '../../src/state/store/database.js';
import { createOutboundClient, normaliseApiUrl, SLACK_CALL_TIMEOUT_MS } from './slack-calls.js';
import { registerInbound, skippedOnArrival } from './slack-inbound.js';
import { registerInteractions } from './slack-interactions.js';
import { toSlackLogger } from './slack-logger.js';
import { createSlackPort } from './slack-port.js';
import { checkScopes, EVENTS_REMINDER, identifyBot, SlackStartupError } from './startup-check.js';
import { createUserNames } from './user-names.js';
import { DurableApp } from './durable-app.js';
import type { ReceiptJournal } from '../../src/gateway/receipts.js';
import { createSlackReader } from './conversation-reader.js';
import { createAssistantThreads, registerAssistantEvents } from './assistant-threads.js';
import { DEFAULT_SUGGESTED_PROMPTS, type SuggestedPrompt } from '../../src/settings/slack-file.js';
import type { HttpRoutes } from '../../src/basics/http-server.js';
import { EVENTS_PATH, SlackEventsReceiver } from './events-receiver.js';

export interface SlackAdapterOptions {
  config: NonNullable<Config['slack']>;
  /** The bot's HTTP server, where HTTP mode adds `POST /slack/events` (unused in Socket Mode). */
  http?: HttpRoutes;
  gateway: GatewayApi;
  /** The operational tables (assistant threads; the receipts come as `receipts`). */
  database: OpenedDatabase;
  /** Where request bodies are journaled before they are acknowledged (createReceiptJournal on the core's database). */
  receipts: ReceiptJournal;
  log: Logger;
  /** Retries of Bolt's own WebClient (used for nothing that posts); tests pass 0. */
  retries?: number;
  /** Timeout of one Web API call (default 10 s); tests shorten it. */
  callTimeoutMs?: number;
  /** Longest total wait for 429s while reading context (default 10 s); tests shorten it. */
  maxRateLimitWaitMs?: number;
  /** The clock request timestamps are checked against (default Date.now). */
  now?: () => number;
  /** Offered when a person opens a new assistant thread (hermes.config `slack: suggested_prompts`). */
  suggestedPrompts?: readonly SuggestedPrompt[];
  /** How often a working turn renews its assistant thread status (default STATUS_RENEW_MS); tests shorten it. */
  statusRenewMs?: number;
}

export type SlackAdapter = Adapter;

export async function createSlackAdapter(opts: SlackAdapterOptions): Promise<SlackAdapter> {
  const { config, gateway, database, log } = opts;
  const slackLogger = toSlackLogger(log);
  const client = createOutboundClient(config.botToken, config.apiUrl, slackLogger, opts.callTimeoutMs);

  const identity = await identifyBot(client);
  const scopeReport = checkScopes(identity.scopes);
  for (const w of scopeReport.warnings) log.warn(w);
  if (scopeReport.errors.length) throw new SlackStartupError(scopeReport.errors.join('\n'));
  log.info({ team: identity.teamId, botUser: identity.botUserId }, `slack: token ok. ${EVENTS_REMINDER}`);

  const httpReceiver = config.appToken === undefined ? new SlackEventsReceiver({ signingSecret: config.signingSecret ?? '', logger: slackLogger, log, now: opts.now }) : undefined;
  const http = opts.http;
  if (httpReceiver && !http) throw new Error('slack: HTTP mode needs the bot\'s HTTP server to add POST /slack/events to');
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
  }, opts.receipts, log, (body) => skippedOnArrival(body, identity.teamId, identity.botUserId, identity.botId));
  app.error(async (err) => {
    log.error({ err: { code: err.code, message: err.message } }, 'slack: Bolt reported an error');
  });

  const names = createUserNames(client, log);
  const reader = createSlackReader({ client, names, log, botUserId: identity.botUserId, botId: identity.botId, ...(opts.maxRateLimitWaitMs !== undefined && { maxRateLimitWaitMs: opts.maxRateLimitWaitMs }) });
  const assistantDeps = { client, database, log, prompts: opts.suggestedPrompts ?? DEFAULT_SUGGESTED_PROMPTS };
  const assistant = createAssistantThreads(assistantDeps);
  const port = createSlackPort({ client, log, reader, botToken: config.botToken, apiUrl: config.apiUrl, assistant, ...(opts.statusRenewMs !== undefined && { statusRenewMs: opts.statusRenewMs }) });
  gateway.registerPort(port);
  const deps = { gateway, log, teamId: identity.teamId };
  registerInbound(app, { ...deps, dedupe: app.dedupe, names, botUserId: identity.botUserId, botId: identity.botId, onQueued: (c, text) => assistant.titleFrom(c, text) });
  registerAssistantEvents(app, assistantDeps);
  registerInteractions(app, { ...deps, client });

  let removeRoute: (() => void) | undefined;
  let started = false;
  return {
    port,
    async start() {
      if (started) return;
      // Starting the App starts its receiver: the WebSocket in Socket Mode, nothing in HTTP mode.
      await app.start();
      if (httpReceiver && http) {
        removeRoute = http.add(httpReceiver.route);
        log.info(`slack: listening for events on POST ${EVENTS_PATH}`);
      } else log.info('slack: connected in Socket Mode');
      started = true;
      const replayed = await app.replayPending();
      if (replayed) log.info({ replayed }, 'slack: replayed requests acknowledged before a restart');
    },
    async stop() {
      if (!started) return;
      started = false;
      // Requests after this get 404 and Slack delivers them again later (to this or another instance).
      removeRoute?.();
      removeRoute = undefined;
      await app.stop().catch((err: unknown) => log.warn({ err }, 'slack: stop failed'));
    },
  };
}

function createSocketReceiver(config: SlackAdapterOptions['config'], logger: SlackLogger): InstanceType<typeof SocketModeReceiver> {
  return new SocketModeReceiver({
    appToken: config.appToken ?? '',
    logger,
    // Bolt hands installerOptions.clientOptions to the Socket Mode client: the only way to point
    // apps.connections.open at SLACK_API_URL. No installer is created (no OAuth client id).
    installerOptions: { clientOptions: { slackApiUrl: normaliseApiUrl(config.apiUrl), timeout: SLACK_CALL_TIMEOUT_MS } },
  });
}
