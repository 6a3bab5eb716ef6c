import { afterEach, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import pg from 'pg';
import { createSlackAdapter, type SlackAdapter } from '../../adapters/slack/slack-adapter.js';
import { createCore, type Core } from '../../src/app/app.js';
import { createBotHttp } from '../../src/app/bot-http.js';
import { createReceiptJournal } from '../../src/gateway/receipts.js';
import { loadConfig } from '../../src/settings/config.js';
import { createPostgresStore } from '../../src/state/store/postgres-store.js';
import { openPostgresDatabase } from '../../src/state/store/database.js';
import type { Store } from '../../src/state/store/store.js';
import type { HttpServer } from '../../src/basics/http-server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';
import { waitFor } from '../helpers/wait-for.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * What one plain reply costs in statements on PostgreSQL, counted at the two places a statement
 * leaves the bot: every statement on the tables (Kysely's log) and every key-value call. The work
 * queue's lease renewals and presence notes go over its LISTEN connection and are not counted here
 * (bench/pg-statement-count.mjs counts them at the driver). One Slack channel mention (delivered
 * twice, app_mention and message.channels) → one answer, no tools, the second mention of a
 * conversation (the first created the session and warmed the caches, as the bench's unmeasured
 * round does). Counts are deterministic, so the test asserts a ceiling and names each statement.
 */

interface Running {
  slack: FakeSlack;
  ai: FakeOpenAI;
  core: Core;
  adapter: SlackAdapter;
  http: HttpServer;
  target: string;
  dataDir: string;
  schema: { url: string; drop(): Promise<void> };
  calls: string[];
  recording: boolean;
}

const pgUrl = await postgresForTests();
let run: Running | undefined;
afterEach(async () => {
  if (!run) return;
  const r = run;
  run = undefined;
  await r.adapter.stop();
  await r.http.stop();
  await r.core.close();
  await Promise.all([r.slack.close(), r.ai.close()]);
  await r.schema.drop();
  await rm(r.dataDir, { recursive: true, force: true });
});

function recordingStore(inner: Store, note: (call: string) => void): Store {
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

async function start(baseUrl: string): Promise<Running> {
  const schema = await freshSchema(baseUrl);
  const slack = await startFakeSlack();
  const ai = await startFakeOpenAI();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-pg-calls-'));
  const result = loadConfig(
    {
      OPENAI_BASE_URL: ai.url,
      OPENAI_API_KEY: 'test',
      HERMES_MODEL_RETRIES: '0',
      HERMES_DATA_DIR: dataDir,
      HERMES_STORE_URL: schema.url,
      HERMES_USER_RATE: '0',
      HERMES_STREAMING: 'off',
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
      PORT: '0',
    },
    dataDir,
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  const log = pino({ level: 'silent' });
  const r = { slack, ai, dataDir, schema, calls: [] as string[], recording: false } as Partial<Running> as Running;
  const note = (call: string) => {
    if (r.recording) r.calls.push(call);
  };
  const shared = await createPostgresStore({ url: schema.url, log });
  const store = recordingStore(shared, note);
  const database = await openPostgresDatabase(shared.pool, log, shared.reserved);
  database.stats.onQuery = (sql) => note(`sql ${sql.replace(/\s+/g, ' ').slice(0, 140)}`);
  const core = await createCore({ config, log, reminders: false, store, shared, database });
  const http = createBotHttp({ log, isReady: () => true });
  const adapter = await createSlackAdapter({ config: config.slack!, http, gateway: core.gateway, database: core.database, receipts: createReceiptJournal(core.database, 'slack'), log });
  const port = await http.start(0, '127.0.0.1');
  await adapter.start();
  await core.start();
  const close = core.close.bind(core);
  core.close = async () => {
    await close();
    await database.close();
    await shared.close();
  };
  Object.assign(r, { core, adapter, http, target: `http://127.0.0.1:${port}/slack/events` });
  return r;
}

/** One channel mention as Slack delivers it (both events), then everything it causes is over. */
async function mention(r: Running, channel: string, text: string): Promise<void> {
  const posts = r.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).length;
  const ts = r.slack.nextTs();
  const common = { user: 'U1', text: `<@${r.slack.botUserId}> ${text}`, ts, channel };
  const acks = await Promise.all([r.slack.sendEvent(r.target, { type: 'app_mention', ...common }), r.slack.sendEvent(r.target, { type: 'message', channel_type: 'channel', ...common })]);
  expect(acks.map((a) => a.status)).toEqual([200, 200]);
  await waitFor('the answer', () => r.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).length > posts, { everyMs: 5 });
  await r.core.gateway.idle();
  // Read the receipt journal over a connection of our own, so waiting is not counted.
  const peek = new pg.Client({ connectionString: r.schema.url, connectionTimeoutMillis: 5_000, query_timeout: 5_000 });
  await peek.connect();
  try {
    let open = 1;
    await waitFor('both deliveries done', async () => {
      open = Number((await peek.query<{ n: string }>('select count(*) as n from hermes_receipt where done_at is null')).rows[0]!.n);
      return open === 0;
    }, { everyMs: 5 });
  } finally {
    await peek.end();
  }
}

describe.skipIf(!pgUrl)('statements of one plain reply (PostgreSQL)', () => {
  it('answers a channel mention in at most the budgeted statements, and lists them', async () => {
    run = await start(pgUrl!);
    run.ai.enqueue({ text: 'first answer' });
    await mention(run, 'C100', 'question 0');
    run.ai.enqueue({ text: 'second answer' });
    run.recording = true;
    await mention(run, 'C100', 'question 1');
    run.recording = false;
    const calls = run.calls;
    if (process.env.STORE_CALLS_LIST) console.log(`${calls.length} statements:\n${calls.map((c, i) => `${String(i + 1).padStart(3)} ${c}`).join('\n')}`);
    expect(run.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).map((c) => c.args.text)).toEqual(['first answer', 'second answer']);
    // 8 on a quiet machine, besides the work queue's: receipt, the accept (mark, work row and receipt
    // settled in one statement), the session's start, noted thread messages, the question's append
    // (with its search row), the speaker's facts (key-value), the token count, the answer's append.
    // The adapter's "receipt done" was a statement of its own, and the model call read the history
    // back from the table, before the receipt was settled in the accept and a turn answered its
    // session's history from what it held (the conversation's lane is this instance's while it runs).
    // The queue's: claims (the next one deletes the finished row; when none follows soon the delete
    // goes alone) and, under load, a steering look (`select "id", "payload" from "hermes_work"`).
    const queue = calls.filter((c) => c.includes('update hermes_work set claimed_by') || c.startsWith('sql delete from "hermes_work"') || c.startsWith('sql select "id", "payload" from "hermes_work"')).length;
    expect(calls.length - queue).toBeLessThanOrEqual(8);
    expect(calls.filter((c) => c.includes('"m"."body" from "hermes_session"') || c.startsWith('sql update "hermes_receipt"'))).toEqual([]);
  });
});
