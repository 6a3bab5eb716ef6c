import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { openSqliteDatabase } from '../../src/state/store/database.js';
import { mention, recordingStore, startReplyRig, type ReplyRig } from './reply-calls-rig.js';

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

let run: ReplyRig | undefined;
afterEach(async () => {
  const r = run;
  run = undefined;
  await r?.stop();
});

/** SQLite the way the bench's bot process opens it; receipts are read over a read-only handle of our own. */
function start(): Promise<ReplyRig> {
  return startReplyRig(async (dataDir, note, log) => {
    const file = path.join(dataDir, 'hermes.sqlite');
    const store = recordingStore(await createSqliteStore({ file, log }), note);
    const database = await openSqliteDatabase(file, log);
    let peek: Database.Database | undefined;
    return {
      env: {},
      store,
      database,
      openReceipts: async () => {
        peek ??= new Database(file, { readonly: true });
        return (peek.prepare('select count(*) as n from hermes_receipt where done_at is null').get() as { n: number }).n;
      },
      close: async () => {
        peek?.close();
        await store.close();
        await database.close();
      },
    };
  });
}

describe('store calls of one plain reply (SQLite)', () => {
  it('answers a channel mention in at most the budgeted store calls, and lists them', async () => {
    run = await start();
    // The first mention creates the session and warms the caches, as the bench's unmeasured round does.
    run.ai.enqueue({ text: 'first answer', usage: { prompt_tokens: 100, completion_tokens: 5 } });
    await mention(run, 'C100', 'question 0');
    run.ai.enqueue({ text: 'second answer', usage: { prompt_tokens: 200, completion_tokens: 7 } });
    run.recording = true;
    const commits0 = run.core.database.stats.commits ?? 0;
    await mention(run, 'C100', 'question 1');
    run.recording = false;
    const commits = (run.core.database.stats.commits ?? 0) - commits0;
    const calls = run.calls;
    if (process.env.STORE_CALLS_LIST) console.log(`${calls.length} store calls, ${commits} commits:\n${calls.map((c, i) => `${String(i + 1).padStart(3)} ${c}`).join('\n')}`);
    expect(run.slack.callsTo('chat.postMessage').filter((c) => c.status === 200).map((c) => c.args.text)).toEqual(['first answer', 'second answer']);
    // 6 on a quiet machine, and no claim: the accept writes the turn's row already claimed when the
    // lane is free and there is room, and it runs at once (7 = 6 + the claim before that; 8 = 7 + 1 while the
    // model call's token count was a statement of its own beside the answer's append; 11 = 9 + 2 while the
    // accept's mark, its work row and the receipt settled were three statements, and the turn's
    // end looked for more work with a claim when this process had added none; 12 = 10 + 2 while the session of a conversation the mention opens was read before
    // it was started; 14 = 12 + 2 before migration 0013 had the question's and the answer's history
    // appends write their search rows; 15 = 13 + 2 before migration 0012 started a session (its row and the conversation's
    // pointer) in one statement; 16 = 14 + 2 before migration 0011 had the search row's insert write
    // its author's membership; 18 = 16 + 2 while the accept transaction's BEGIN and COMMIT were statements of their
    // own; 21 = 19 + 2 before migration 0010 moved the Slack event-id mark into the receipt row and
    // the noted thread messages into a table an instance on SQLite knows to be empty here). The
    // load governor (src/gateway/load-governor.ts) wakes the queue when it raises its limit, which a
    // busy machine can make it do mid-turn: each such wake-up that finds a row waiting is one more claim.
    const claims = calls.filter((c) => c.includes('update hermes_work set claimed_by')).length;
    expect(calls.length - claims).toBeLessThanOrEqual(6);
    // The question and the answer are still searchable: their appends wrote the search rows.
    const peek = new Database(path.join(run.dataDir, 'hermes.sqlite'), { readonly: true });
    try {
      const indexed = peek.prepare("select author, text from hermes_recall_message where text in ('question 1', 'second answer') order by seq").all();
      expect(indexed).toEqual([{ author: 'slack:T0TEAM:U1', text: 'question 1' }, { author: 'bot', text: 'second answer' }]);
      // The token count rode on the answers' appends (schema step 0015), and counts both calls exactly.
      expect(calls.filter((c) => c.includes('"hermes_usage"'))).toEqual([]);
      expect(peek.prepare('select kind, subject, tokens from hermes_usage').all()).toEqual([{ kind: 'person', subject: 'slack:U1', tokens: 312 }]);
      expect(peek.prepare('select count(*) as n from hermes_message where charge is not null or search_row is not null').get()).toEqual({ n: 0 });
    } finally {
      peek.close();
    }
    // Commits: 6 on a quiet machine. One reply alone has little to share a
    // commit with: each write it waits for is one. Under load the writes of many replies share each commit (sqlite-group-commit.ts).
    expect(commits).toBeGreaterThanOrEqual(1);
    expect(commits).toBeLessThanOrEqual(6 + claims);
    expect(claims).toBeLessThanOrEqual(3);
  });
});
