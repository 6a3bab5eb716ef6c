import { afterEach, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import Database from 'better-sqlite3';
import { createSlackAdapter, type SlackAdapter } from '../../adapters/slack/slack-adapter.js';
import { createCore, type Core } from '../../src/app/app.js';
import { createBotHttp } from '../../src/app/bot-http.js';
import { createReceiptJournal } from '../../src/gateway/receipts.js';
import { loadConfig } from '../../src/settings/config.js';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { openSqliteDatabase } from '../../src/state/store/database.js';
import type { Store } from '../../src/state/store/store.js';
import type { HttpServer } from '../../src/basics/http-server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * What one plain reply costs in store calls, counted as the bench counts them (bench/slack-bot-process.ts):
 * every key-value call plus every statement on the tables. On SQLite there are no BEGIN and COMMIT
 * statements of our own to count: writes are group-committed per event-loop turn and a Kysely
 * transaction is a savepoint inside that (src/state/store/sqlite-group-commit.ts); the commits are
 * counted apart (`stats.commits`). One Slack
 * channel mention (delivered twice, app_mention and message.channels) → one answer, no tools, on
 * SQLite, the way the bench's bot process is wired. Counts are deterministic, so the test asserts
 * a ceiling; it also names each call so a regression shows where it came from.
 */

interface Running {
  slack: FakeSlack;
  ai: FakeOpenAI;
  core: Core;
  adapter: SlackAdapter;
  http: HttpServer;
  target: string;
  dataDir: string;
  calls: string[];
  recording: boolean;
}

let run: Running | undefined;
afterEach(async () => {
  if (!run) return;
  const r = run;
  run = undefined;
  await r.adapter.stop();
  await r.http.stop();
  await r.core.close();
  await Promise.all([r.slack.close(), r.ai.close()]);
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

async function start(): Promise<Running> {
  const slack = await startFakeSlack();
  const ai = await startFakeOpenAI();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-store-calls-'));
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
    },
    dataDir,
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  const log = pino({ level: 'silent' });
  const r = { slack, ai, dataDir, calls: [] as string[], recording: false } as Running;
  const note = (call: string) => {
    if (r.recording) r.calls.push(call);
  };
  const file = path.join(dataDir, 'hermes.sqlite');
  const store = recordingStore(await createSqliteStore({ file, log }), note);
  const database = await openSqliteDatabase(file, log);
  database.stats.onQuery = (sql) => note(`sql ${sql.replace(/\s+/g, ' ').slice(0, 140)}`);
  const core = await createCore({ config, log, reminders: false, store, database });
  const http = createBotHttp({ log, isReady: () => true });
  const adapter = await createSlackAdapter({ config: config.slack!, http, gateway: core.gateway, database: core.database, receipts: createReceiptJournal(core.database, 'slack'), log });
  const port = await http.start(0, '127.0.0.1');
  await adapter.start();
  await core.start();
  // createCore does not own a database it was given: close it after the core.
  const close = core.close.bind(core);
  core.close = async () => {
    await close();
    await store.close();
    await database.close();
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
  const peek = new Database(path.join(r.dataDir, 'hermes.sqlite'), { readonly: true });
  try {
    await waitFor('both deliveries done', () => (peek.prepare('select count(*) as n from hermes_receipt where done_at is null').get() as { n: number }).n === 0, { everyMs: 5 });
  } finally {
    peek.close();
  }
}

describe('store calls of one plain reply (SQLite)', () => {
  it('answers a channel mention in at most the budgeted store calls, and lists them', async () => {
    run = await start();
    // The first mention creates the session and warms the caches, as the bench's unmeasured round does.
    run.ai.enqueue({ text: 'first answer' });
    await mention(run, 'C100', 'question 0');
    run.ai.enqueue({ text: 'second answer' });
    run.recording = true;
    const commits0 = run.core.database.stats.commits ?? 0;
    await mention(run, 'C100', 'question 1');
    run.recording = false;
    const commits = (run.core.database.stats.commits ?? 0) - commits0;
    const calls = run.calls;
    if (process.env.STORE_CALLS_LIST) console.log(`${calls.length} store calls, ${commits} commits:\n${calls.map((c, i) => `${String(i + 1).padStart(3)} ${c}`).join('\n')}`);
    expect(run.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).map((c) => c.args.text)).toEqual(['first answer', 'second answer']);
    // 11 on a quiet machine: 9 statements plus the claim of the turn's row and the look for more
    // after it (12 = 10 + 2 while the session of a conversation the mention opens was read before
    // it was started; 14 = 12 + 2 before migration 0013 had the question's and the answer's history
    // appends write their search rows; 15 = 13 + 2 before migration 0012 started a session (its row and the conversation's
    // pointer) in one statement; 16 = 14 + 2 before migration 0011 had the search row's insert write
    // its author's membership; 18 = 16 + 2 while the accept transaction's BEGIN and COMMIT were statements of their
    // own; 21 = 19 + 2 before migration 0010 moved the Slack event-id mark into the receipt row and
    // the noted thread messages into a table an instance on SQLite knows to be empty here). The
    // load governor (src/gateway/load-governor.ts) wakes the queue when it raises its limit, which a
    // busy machine can make it do mid-turn: each such wake-up is one more claim.
    const claims = calls.filter((c) => c.includes('update hermes_work set claimed_by')).length;
    expect(calls.length - claims).toBeLessThanOrEqual(9);
    // The question and the answer are still searchable: their appends wrote the search rows.
    const peek = new Database(path.join(run.dataDir, 'hermes.sqlite'), { readonly: true });
    try {
      const indexed = peek.prepare("select author, text from hermes_recall_message where text in ('question 1', 'second answer') order by seq").all();
      expect(indexed).toEqual([{ author: 'slack:T0TEAM:U1', text: 'question 1' }, { author: 'bot', text: 'second answer' }]);
    } finally {
      peek.close();
    }
    // Commits: 10 on a quiet machine (8 + the two claims'). One reply alone has little to share a
    // commit with: each write it waits for is one. Under load the writes of many replies share each commit (sqlite-group-commit.ts).
    expect(commits).toBeGreaterThanOrEqual(1);
    expect(commits).toBeLessThanOrEqual(8 + claims);
    expect(claims).toBeGreaterThanOrEqual(1);
    expect(claims).toBeLessThanOrEqual(4);
  });
});
