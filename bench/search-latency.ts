import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { freshSchema } from '../test/helpers/postgres.js';
import { startThrowawayPostgres } from '../test/helpers/start-postgres.js';
import { createPgPool } from '../src/state/store/postgres-store.js';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from '../src/state/store/database.js';
import { createMessageIndex, type MessageIndex } from '../src/state/recall/message-index.js';
import { createConversationSearch } from '../src/state/recall/conversation-search.js';
import type { Conversation, Speaker } from '../src/basics/types.js';
import { percentile } from '../src/basics/percentile.js';

/**
 * search_conversations latency over 100,000 stored messages, on SQLite and on PostgreSQL
 * (HERMES_TEST_PG_URL, else a throw-away cluster). Runnable alone: `npx tsx bench/search-latency.ts`
 * (`--messages N`, `--queries N`). 200 people in 40 channels with 5 threads each, plus a DM each;
 * words drawn from a 5,000-word vocabulary with a skew (common words match thousands of messages).
 * Each query is one full search as the tool runs it (keyword candidates, fusion, thread starts),
 * by a random person, from a DM (their DMs included) or a channel.
 */
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MESSAGES = arg('messages', 100_000);
const QUERIES = arg('queries', 300);
const PEOPLE = 200;
const CHANNELS = 40;
const VOCAB = Array.from({ length: 5_000 }, (_, i) => `w${i.toString(36)}x`);
const log = pino({ level: 'silent' });

// mulberry32: the earlier LCG (mod 2^31) drew consecutive values so alike that 200 people took part
// in only 324 places in all (each saw about 1 % of the messages); this one gives every person their
// 4 channels and their threads, as the comment above says.
let seed = 42;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
};
/** Skewed: low ids far more often (a few words are very common). */
const word = () => VOCAB[Math.floor(VOCAB.length * rand() ** 3)]!;
const person = (i: number): Speaker => ({ platform: 'slack', workspaceId: 'T1', userId: `U${i}`, displayName: `user${i}` });

async function fill(index: MessageIndex): Promise<void> {
  const start = Date.UTC(2026, 0, 1);
  for (let i = 0; i < MESSAGES; i++) {
    const p = Math.floor(rand() * PEOPLE);
    const dm = rand() < 0.2;
    const ch = (p + Math.floor(rand() * 4)) % CHANNELS;
    const thread = rand() < 0.6 ? `${1000 + ch}.${Math.floor(rand() * 5)}` : undefined;
    const conversation: Conversation = dm
      ? { platform: 'slack', workspaceId: 'T1', channelId: `D${p}`, isDm: true }
      : { platform: 'slack', workspaceId: 'T1', channelId: `C${ch}`, ...(thread && { threadId: thread }), isDm: false };
    const words = Array.from({ length: 8 + Math.floor(rand() * 25) }, word).join(' ');
    await index.record({ id: `m${i}`, conversation, author: rand() < 0.3 ? 'bot' : person(p), dmOwner: person(p), text: words, at: start + i * 60_000 });
  }
}

async function measure(name: string, database: OpenedDatabase): Promise<void> {
  const index = createMessageIndex({ database, log });
  const t0 = performance.now();
  await fill(index);
  const fillS = (performance.now() - t0) / 1000;
  // What a running bot does between writes and searches: SQLite's checkpointer thread moves the WAL
  // into the database file (the bench has no checkpointer, and 100,000 inserts leave a WAL every
  // read must consult), PostgreSQL's autovacuum gathers statistics for the planner.
  if (database.dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(database.db);
  else await sql`analyze`.execute(database.db);
  const places = await database.db.selectFrom('hermes_recall_member').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  const searches = createConversationSearch({ index });
  const times: number[] = [];
  let hits = 0;
  for (let q = 0; q < QUERIES + 20; q++) {
    const s = searches.forSpeaker(person(Math.floor(rand() * PEOPLE)), { dms: rand() < 0.5 });
    const query = Array.from({ length: 1 + Math.floor(rand() * 3) }, word).join(' ');
    const t = performance.now();
    hits += (await s.search(query, 10)).length;
    if (q >= 20) times.push(performance.now() - t); // the first 20 warm caches
  }
  times.sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(1);
  console.log(`${name}: ${MESSAGES} messages stored in ${fillS.toFixed(1)} s (${Number(places.n)} memberships); ${QUERIES} searches: p50 ${f(percentile(times, 50))} ms, p95 ${f(percentile(times, 95))} ms, max ${f(times.at(-1)!)} ms; ${(hits / (QUERIES + 20)).toFixed(1)} hits per search`);
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-search-bench-'));
try {
  const sqlite = await openSqliteDatabase(path.join(dir, 'bench.sqlite'));
  await measure('SQLite (FTS5)', sqlite);
  await sqlite.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}

let url = process.env.HERMES_TEST_PG_URL;
let stop: (() => Promise<void>) | undefined;
if (!url) {
  const started = await startThrowawayPostgres();
  if ('error' in started) {
    console.log(`PostgreSQL: skipped (${started.error})`);
    process.exit(0);
  }
  url = started.url;
  stop = started.stop;
}
const schema = await freshSchema(url);
const pool = createPgPool(schema.url);
try {
  const pg = await openPostgresDatabase(pool);
  await measure('PostgreSQL (tsvector + GIN)', pg);
  await pg.close();
} finally {
  await pool.end();
  await schema.drop();
  await stop?.();
}
