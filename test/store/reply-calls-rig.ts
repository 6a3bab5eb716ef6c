import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { expect } from 'vitest';
import { createSlackAdapter, type SlackAdapter } from '../../adapters/slack/slack-adapter.js';
import { createCore, type Core, type CoreOptions } from '../../src/app/app.js';
import { createBotHttp } from '../../src/app/bot-http.js';
import type { HttpServer } from '../../src/basics/http-server.js';
import { createReceiptJournal } from '../../src/gateway/receipts.js';
import { loadConfig } from '../../src/settings/load-config.js';
import type { OpenedDatabase } from '../../src/state/store/database.js';
import type { Store } from '../../src/state/store/store.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The rig of the two "one plain reply" counts (reply-store-calls on SQLite, reply-statements-pg on
 * PostgreSQL): the bot wired the way the bench's bot process is, a Slack adapter on its one HTTP
 * server, and every key-value call and every statement on the tables noted while `recording`.
 * The engine is the only difference: it opens the store and the tables and says how many receipts
 * are still open, over a connection of its own so waiting is not counted.
 */

export interface ReplyRig {
  slack: FakeSlack;
  ai: FakeOpenAI;
  core: Core;
  adapter: SlackAdapter;
  http: HttpServer;
  target: string;
  dataDir: string;
  engine: RigEngine;
  calls: string[];
  recording: boolean;
  stop(): Promise<void>;
}

export interface RigEngine {
  /** Environment the engine needs besides the rig's own (HERMES_STORE_URL on PostgreSQL). */
  env: Record<string, string>;
  store: Store;
  database: OpenedDatabase;
  shared?: CoreOptions['shared'];
  /** Receipts not yet settled. */
  openReceipts(): Promise<number>;
  /** Closes what the engine opened, after the core. */
  close(): Promise<void>;
}

/** Every key-value call, noted before it goes to `inner`. */
export function recordingStore(inner: Store, note: (call: string) => void): Store {
  return {
    get: (key) => (note(`kv get ${key}`), inner.get(key)),
    set: (key, value, ttl) => (note(`kv set ${key}`), inner.set(key, value, ttl)),
    delete: (key) => (note(`kv delete ${key}`), inner.delete(key)),
    update: (key, fn, opts) => (note(`kv update ${key}`), inner.update(key, fn, opts)),
    increment: (key, by, ttl) => (note(`kv increment ${key}`), inner.increment(key, by, ttl)),
    keysWithPrefix: (prefix) => (note(`kv keys ${prefix}`), inner.keysWithPrefix(prefix)),
    close: () => inner.close(),
  };
}

/** Starts the bot on the engine `open` gives for the rig's data dir; `note` is the rig's recorder. */
export async function startReplyRig(open: (dataDir: string, note: (call: string) => void, log: Logger) => Promise<RigEngine>): Promise<ReplyRig> {
  const slack = await startFakeSlack();
  const ai = await startFakeOpenAI();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-reply-calls-'));
  const log = pino({ level: 'silent' });
  const r = { slack, ai, dataDir, calls: [] as string[], recording: false } as Partial<ReplyRig> as ReplyRig;
  const note = (call: string) => {
    if (r.recording) r.calls.push(call);
  };
  const engine = await open(dataDir, note, log);
  const result = loadConfig(
    {
      OPENAI_BASE_URL: ai.url,
      OPENAI_API_KEY: 'test',
      HERMES_MODEL_RETRIES: '0',
      HERMES_DATA_DIR: dataDir,
      HERMES_USER_RATE: '0',
      HERMES_STREAMING: 'off',
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
      PORT: '0',
      ...engine.env,
    },
    dataDir,
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  engine.database.stats.onQuery = (sql) => note(`sql ${sql.replace(/\s+/g, ' ').slice(0, 140)}`);
  // createCore does not own a store or tables it was given: the engine closes them after the core.
  const core = await createCore({ config, log, reminders: false, store: engine.store, database: engine.database, ...(engine.shared && { shared: engine.shared }) });
  const http = createBotHttp({ log, isReady: () => true });
  const adapter = await createSlackAdapter({ config: config.slack!, http, gateway: core.gateway, database: core.database, receipts: createReceiptJournal(core.database, 'slack'), log });
  const port = await http.start(0, '127.0.0.1');
  await adapter.start();
  await core.start();
  return Object.assign(r, {
    engine,
    core,
    adapter,
    http,
    target: `http://127.0.0.1:${port}/slack/events`,
    async stop() {
      await adapter.stop();
      await http.stop();
      await core.close();
      await engine.close();
      await Promise.all([slack.close(), ai.close()]);
      await rm(dataDir, { recursive: true, force: true });
    },
  });
}

/** One channel mention as Slack delivers it (both events), then everything it causes is over. */
export async function mention(r: ReplyRig, channel: string, text: string): Promise<void> {
  const posts = r.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).length;
  const ts = r.slack.nextTs();
  const common = { user: 'U1', text: `<@${r.slack.botUserId}> ${text}`, ts, channel };
  const acks = await Promise.all([r.slack.sendEvent(r.target, { type: 'app_mention', ...common }), r.slack.sendEvent(r.target, { type: 'message', channel_type: 'channel', ...common })]);
  expect(acks.map((a) => a.status)).toEqual([200, 200]);
  await waitFor('the answer', () => r.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).length > posts, { everyMs: 5 });
  await r.core.gateway.idle();
  await waitFor('both deliveries done', async () => (await r.engine.openReceipts()) === 0, { everyMs: 5 });
}
