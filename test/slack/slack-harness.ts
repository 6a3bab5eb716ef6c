import { mkdtemp, rm } from 'node:fs/promises';
import { createReceiptJournal } from '../../src/gateway/receipts.js';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createSlackAdapter, type SlackAdapter } from '../../adapters/slack/slack-adapter.js';
import { createCore, type Core } from '../../src/app/app.js';
import { loadConfig } from '../../src/settings/load-config.js';
import type { Config } from '../../src/settings/config.js';
import type { GatewayApi } from '../../src/basics/ports.js';
import type { Clock } from '../../src/basics/clock.js';
import type { AnyTool } from '../../src/capabilities/toolkit/tool-api.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack, type FakeSlackOptions } from '../fakes/slack/fake-slack.js';
import type { RequestHandler } from '../../src/operations/dashboard/dashboard.js';
import { createBotHttp } from '../../src/app/bot-http.js';
import type { HttpServer } from '../../src/basics/http-server.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The whole bot as it runs in production — real Bolt App and WebClient, real core on SQLite,
 * real OpenAI SDK — against fake Slack and fake OpenAI servers on 127.0.0.1.
 */
export interface SlackHarness {
  slack: FakeSlack;
  ai: FakeOpenAI;
  core: Core;
  adapter: SlackAdapter;
  /** The bot's one HTTP server (src/app/bot-http.ts), started in Socket Mode too, to show the adapter adds no route there. */
  http: HttpServer;
  /** The bot's POST /slack/events URL. */
  target: string;
  base: string;
  config: Config;
  ready: boolean;
  /** Closes adapter and core, then opens both again on the same data dir; `whileDown` runs in between. */
  restart(whileDown?: () => void | Promise<void>): Promise<void>;
  /**
   * Resolves once every delivery acknowledged so far went through Bolt's listeners (the receipt
   * journal is empty: DurableApp clears a receipt when its listeners finished) and the gateway is
   * idle: nothing sent so far can still cause a model call or a post.
   */
  settled(): Promise<void>;
  close(): Promise<void>;
  /** A user's top-level channel post mentioning the bot: the app_mention and message.channels pair. */
  mention(channel: string, user: string, text: string, opts?: { threadTs?: string; pair?: boolean }): Promise<string>;
  /** A user's DM to the bot. */
  dm(channel: string, user: string, text: string, opts?: { threadTs?: string }): Promise<string>;
  /** A plain channel message (thread reply when threadTs is set). */
  say(channel: string, user: string, text: string, opts?: { threadTs?: string }): Promise<string>;
}

export interface HarnessOptions {
  extraTools?: AnyTool[];
  env?: Record<string, string>;
  slack?: FakeSlackOptions;
  /** Timeout of one Slack Web API call. */
  callTimeoutMs?: number;
  /** Connect over Socket Mode (SLACK_APP_TOKEN) instead of HTTP. */
  socketMode?: boolean;
  /** Longest total 429 wait while reading context (adapter default 10 s). */
  maxRateLimitWaitMs?: number;
  /** Wraps the core's gateway (to inject faults at the adapter boundary). */
  wrapGateway?: (g: GatewayApi) => GatewayApi;
  /** The core's clock (a manual clock drives reminders and scheduled runs without sleeping). */
  clock?: Clock;
  /** Start the due timer (reminders, scheduled tasks); off by default so nothing fires unasked. */
  dueTimer?: boolean;
  /** How often a working turn renews its assistant thread status (the adapter's default is 90 s). */
  statusRenewMs?: number;
  /** Serves this handler under /dashboard on the bot's HTTP server (as main.ts does with a token). */
  dashboard?: (core: Core, config: Config) => RequestHandler;
}

export async function startSlackHarness(opts: HarnessOptions = {}): Promise<SlackHarness> {
  const slack = await startFakeSlack(opts.slack);
  const ai = await startFakeOpenAI();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-slack-'));
  const result = loadConfig(
    {
      OPENAI_BASE_URL: ai.url,
      OPENAI_API_KEY: 'test',
      HERMES_MODEL_RETRIES: '0',
      HERMES_DATA_DIR: dataDir,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      // Without the trailing slash on purpose: the adapter must normalise it.
      SLACK_API_URL: slack.apiUrl.replace(/\/$/, ''),
      PORT: '0',
      // Indicators show at once here so tests can see them; the product waits (HERMES_PROGRESS_DELAY_MS).
      HERMES_PROGRESS_DELAY_MS: '0',
      // Answers posted whole: these tests read them as posts; streaming has its own tests.
      HERMES_STREAMING: 'off',
      ...(opts.socketMode ? { SLACK_APP_TOKEN: slack.appToken } : {}),
      ...opts.env,
    },
    dataDir,
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  const log = pino({ level: process.env.TEST_LOG ?? 'silent' });

  const h = { slack, ai, config, ready: false } as SlackHarness;
  const open = async () => {
    const core = await createCore({ config, log, extraTools: opts.extraTools, reminders: opts.dueTimer === true, invalidTraces: 'throw', ...(opts.clock ? { clock: opts.clock } : {}) });
    const gateway = opts.wrapGateway ? opts.wrapGateway(core.gateway) : core.gateway;
    // The wrapper must still deliver the port to the real gateway.
    // As main.ts wires it: one server on PORT with /healthz (and the dashboard); the adapter adds its route.
    const handle = opts.dashboard?.(core, config);
    const http = createBotHttp({ log, isReady: () => h.ready, ...(handle && { dashboard: { handle } }) });
    const receipts = createReceiptJournal(core.database, 'slack');
    const adapter = await createSlackAdapter({ config: config.slack!, http, gateway, database: core.database, receipts, log, retries: 0, callTimeoutMs: opts.callTimeoutMs, maxRateLimitWaitMs: opts.maxRateLimitWaitMs, suggestedPrompts: config.slackAssistant.suggestedPrompts, statusRenewMs: opts.statusRenewMs });
    const port = await http.start(0, '127.0.0.1');
    await adapter.start();
    await core.start();
    h.ready = true;
    const base = `http://127.0.0.1:${port}`;
    Object.assign(h, { core, adapter, http, base, target: `${base}/slack/events` });
    h.settled = async () => {
      await waitFor('Bolt to finish every acknowledged delivery', async () => (await receipts.pending()).length === 0, { everyMs: 10 });
      await core.gateway.idle();
    };
  };
  await open();

  h.restart = async (whileDown) => {
    h.ready = false;
    await h.adapter.stop();
    await h.http.stop();
    await h.core.close();
    await whileDown?.();
    await open();
  };
  h.close = async () => {
    await h.adapter.stop();
    await h.http.stop();
    await h.core.close();
    await Promise.all([slack.close(), ai.close()]);
    await rm(dataDir, { recursive: true, force: true });
  };
  h.mention = async (channel, user, text, o = {}) => {
    const ts = slack.nextTs();
    const common = { user, text: `<@${slack.botUserId}> ${text}`, ts, channel, ...(o.threadTs ? { thread_ts: o.threadTs } : {}) };
    await expectOk(slack.sendEvent(h.target, { type: 'app_mention', ...common }));
    if (o.pair !== false) await expectOk(slack.sendEvent(h.target, { type: 'message', channel_type: 'channel', ...common }));
    return ts;
  };
  h.dm = async (channel, user, text, o = {}) => {
    const ts = slack.nextTs();
    await expectOk(slack.sendEvent(h.target, { type: 'message', channel_type: 'im', user, text, ts, channel, ...(o.threadTs ? { thread_ts: o.threadTs } : {}) }));
    return ts;
  };
  h.say = async (channel, user, text, o = {}) => {
    const ts = slack.nextTs();
    await expectOk(slack.sendEvent(h.target, { type: 'message', channel_type: 'channel', user, text, ts, channel, ...(o.threadTs ? { thread_ts: o.threadTs } : {}) }));
    return ts;
  };
  return h;
}

async function expectOk(res: Promise<Response>): Promise<void> {
  const r = await res;
  if (r.status !== 200) throw new Error(`bot answered ${r.status} to an event`);
}
