/**
 * The SQLite write path of one reply on its own, in one process: the 13 writes and 1 read of a
 * reply as test/store/reply-store-calls.test.ts lists them (the work queue's claims left out),
 * through Kysely on the real schema with the checkpointer thread running, `flows` replies at once.
 * Compares Kysely's own SQLite driver (every write outside a transaction commits on its own) with
 * the group commit the tables use (src/state/store/sqlite-group-commit.ts), alternating, and
 * prints the process CPU per reply of each:
 *
 *   npx tsx bench/sqlite-write-path.ts [replies=2000] [flows=50] [plain,group,plain,group]
 */
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { COMMIT_AT_ONCE, openSqliteDatabase, withStatementCache, type Db } from '../src/state/store/database.js';
import type { Tables } from '../src/state/store/db-schema.js';
import { migrateToLatest } from '../src/state/store/migrations.js';
import { startCheckpointer } from '../src/state/store/sqlite-checkpointer.js';

const replies = Number(process.argv[2] ?? 2000), conc = Number(process.argv[3] ?? 50);
async function open(kind: string, file: string) {
  if (kind === 'group') return (await openSqliteDatabase(file)).db;
  const conn = new Database(file, { timeout: 5000 }); conn.pragma('journal_mode = WAL'); conn.pragma('synchronous = NORMAL'); conn.pragma('wal_autocheckpoint = 0');
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(conn) }) });
  await migrateToLatest(db as Kysely<unknown>); return db;
}
async function one(db: Db, i: number) {
  const now = Date.now(); const id = `r${i}`; const ch = `C${i % conc}`; const sess = `s${i}`;
  await db.insertInto('hermes_receipt').values({ platform: 'slack', id, body: JSON.stringify({ event: { text: 'hello there '.repeat(20), ts: now } }), received_at: now }).onConflict((c) => c.columns(['platform', 'id']).doUpdateSet({ received_at: (eb) => eb.ref('hermes_receipt.received_at') })).returning('done_at').modifyEnd(COMMIT_AT_ONCE).executeTakeFirst();
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('hermes_inbound').values({ platform: 'slack', id, outcome: 'queued', accepted_at: now }).onConflict((c) => c.doNothing()).execute();
    await tx.insertInto('hermes_work').values({ id: `w${i}`, kind: 'turn', lane: ch, order_key: String(now).padStart(20, '0'), due_at: now, payload: JSON.stringify({ text: 'hello '.repeat(30) }), claimed_by: null, claimed_until: null, attempts: 0, created_at: now }).execute();
  });
  await db.updateTable('hermes_receipt').set({ done_at: now }).where('platform', '=', 'slack').where('id', '=', id).execute();
  await db.selectFrom('hermes_conversation').selectAll().where('key', '=', `${ch}:${i}`).execute();
  await db.insertInto('hermes_session').values({ id: sess, conversation_key: `${ch}:${i}`, created_at: now, summary: null, summarized_up_to: 0, archived_at: null }).execute();
  await db.insertInto('hermes_conversation').values({ key: `${ch}:${i}`, current_session: sess, joined: 0 }).onConflict((c) => c.column('key').doUpdateSet({ current_session: sess })).execute();
  await db.insertInto('hermes_recall_member').values({ channel_id: ch, thread_id: String(i), member: 'U1', platform: 'slack', workspace_id: 'T1', since: now }).onConflict((c) => c.doNothing()).execute();
  const rm = (rid: string, text: string) => db.insertInto('hermes_recall_message').values({ id: rid, platform: 'slack', workspace_id: 'T1', channel_id: ch, thread_id: String(i), parent_channel_id: null, dm_owner: null, author: 'U1', author_name: 'someone', text, at: now }).execute();
  let seq = 0; const msg = (body: string) => db.insertInto('hermes_message').values({ session_id: sess, seq: seq++, body }).execute();
  await rm(`q${i}`, `question ${i} about the quarterly numbers and the deploy`);
  await msg(JSON.stringify({ role: 'user', content: `question ${i} about the quarterly numbers` }));
  await db.insertInto('hermes_usage').values({ day: '2026-12-03', kind: 'person', subject: `slack:U${i % conc}`, tokens: 120 }).onConflict((c) => c.columns(['day', 'kind', 'subject']).doUpdateSet((eb) => ({ tokens: eb('hermes_usage.tokens', '+', eb.ref('excluded.tokens')) }))).execute();
  await msg(JSON.stringify({ role: 'assistant', content: `answer ${i} `.repeat(20) }));
  await rm(`a${i}`, `answer ${i} `.repeat(20));
  await db.deleteFrom('hermes_work').where('id', '=', `w${i}`).execute();
}
for (const kind of (process.argv[4] ?? 'plain,group,plain,group').split(',')) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'h33c-micro-')); const file = path.join(dir, 'x.sqlite');
  const db = await open(kind, file);
  const cp = startCheckpointer(file, { fallback: () => undefined });
  let next = 0; const warm = 200;
  const worker = async (limit: number) => { while (next < limit) await one(db, next++); };
  await Promise.all(Array.from({ length: conc }, () => worker(warm)));
  const c0 = process.cpuUsage(); const t0 = performance.now();
  await Promise.all(Array.from({ length: conc }, () => worker(warm + replies)));
  const c = process.cpuUsage(c0); const ms = performance.now() - t0;
  console.log(`${kind.padEnd(6)} conc ${conc}: CPU ${((c.user + c.system) / 1000 / replies).toFixed(3)} ms/reply (user ${(c.user / 1000 / replies).toFixed(3)}, sys ${(c.system / 1000 / replies).toFixed(3)}), ${(replies / ms * 1000).toFixed(0)} replies/s`);
  await cp.stop(); await db.destroy(); rmSync(dir, { recursive: true, force: true });
}
