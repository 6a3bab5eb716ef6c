import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createPostgresStore } from '../../src/state/store/postgres-store.js';
import { openPostgresDatabase } from '../../src/state/store/database.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';
import { mention, recordingStore, startReplyRig, type ReplyRig } from './reply-calls-rig.js';

/**
 * What one plain reply costs in statements on PostgreSQL, counted at the two places a statement
 * leaves the bot: every statement on the tables (Kysely's log) and every key-value call. The work
 * queue's lease renewals and presence notes go over its LISTEN connection and are not counted here
 * (bench/pg-statement-count.mjs counts them at the driver). One Slack channel mention (delivered
 * twice, app_mention and message.channels) → one answer, no tools, the second mention of a
 * conversation (the first created the session and warmed the caches, as the bench's unmeasured
 * round does). Counts are deterministic, so the test asserts a ceiling and names each statement.
 */

const pgUrl = await postgresForTests();
let run: ReplyRig | undefined;
afterEach(async () => {
  const r = run;
  run = undefined;
  await r?.stop();
});

/** A fresh schema; receipts are read over a client of our own. */
function start(baseUrl: string): Promise<ReplyRig> {
  return startReplyRig(async (_dataDir, note, log) => {
    const schema = await freshSchema(baseUrl);
    const shared = await createPostgresStore({ url: schema.url, log });
    const database = await openPostgresDatabase(shared.pool, log, shared.reserved);
    let peek: pg.Client | undefined;
    return {
      env: { HERMES_STORE_URL: schema.url },
      store: recordingStore(shared, note),
      database,
      shared,
      openReceipts: async () => {
        if (!peek) {
          peek = new pg.Client({ connectionString: schema.url, connectionTimeoutMillis: 5_000, query_timeout: 5_000 });
          await peek.connect();
        }
        return Number((await peek.query<{ n: string }>('select count(*) as n from hermes_receipt where done_at is null')).rows[0]!.n);
      },
      close: async () => {
        await peek?.end();
        await database.close();
        await shared.close();
        await schema.drop();
      },
    };
  });
}

describe.skipIf(!pgUrl)('statements of one plain reply (PostgreSQL)', () => {
  it('answers a channel mention in at most the budgeted statements, and lists them', async () => {
    run = await start(pgUrl!);
    run.ai.enqueue({ text: 'first answer', usage: { prompt_tokens: 100, completion_tokens: 5 } });
    await mention(run, 'C100', 'question 0');
    run.ai.enqueue({ text: 'second answer', usage: { prompt_tokens: 200, completion_tokens: 7 } });
    run.recording = true;
    await mention(run, 'C100', 'question 1');
    run.recording = false;
    const calls = run.calls;
    if (process.env.STORE_CALLS_LIST) console.log(`${calls.length} statements:\n${calls.map((c, i) => `${String(i + 1).padStart(3)} ${c}`).join('\n')}`);
    expect(run.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).map((c) => c.args.text)).toEqual(['first answer', 'second answer']);
    // 5 on a quiet machine, besides the work queue's: receipt, the accept (mark, work row and receipt
    // settled in one statement), the session's start (which also says whether the thread was joined
    // before, so the noted messages need no read), the question's append (with its search row), the
    // answer's append (with its search row and the model call's token count, schema step 0015; the
    // count was a statement of its own). The speaker's facts were read in the first reply and are
    // kept while the instances tell each other of every change (fact-store.ts).
    // The adapter's "receipt done" was a statement of its own, and the model call read the history
    // back from the table, before the receipt was settled in the accept and a turn answered its
    // session's history from what it held (the conversation's lane is this instance's while it runs).
    // The queue's: claims (the next one deletes the finished row; when none follows soon the delete
    // goes alone) and, under load, a steering look (`select "id", "payload" from "hermes_work"`).
    const queue = calls.filter((c) => c.includes('update hermes_work set claimed_by') || c.startsWith('sql delete from "hermes_work"') || c.startsWith('sql select "id", "payload" from "hermes_work"')).length;
    expect(calls.length - queue).toBeLessThanOrEqual(5);
    // The token count rode on the answers' appends, and counts both calls exactly.
    expect(calls.filter((c) => c.includes('"hermes_usage"'))).toEqual([]);
    const usage = await run.core.database.db.selectFrom('hermes_usage').select(['kind', 'subject', 'tokens']).execute();
    expect(usage.map((u) => ({ ...u, tokens: Number(u.tokens) }))).toEqual([{ kind: 'person', subject: 'slack:U1', tokens: 312 }]);
    expect(calls.filter((c) => c.includes('"m"."body" from "hermes_session"') || c.startsWith('sql update "hermes_receipt"'))).toEqual([]);
    // The opening start says the thread was never joined, so no noted messages can be there to read.
    expect(calls.filter((c) => c.includes('from "hermes_noted_message"'))).toEqual([]);
    expect(calls.filter((c) => c.startsWith('kv get facts:'))).toEqual([]);
  });
});
