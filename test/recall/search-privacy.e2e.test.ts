import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createPgPool } from '../../src/state/store/postgres-store.js';
import { migrateUpTo } from '../../src/state/store/migrations.js';
import { openPostgresDatabase, openSqliteDatabase, postgresMigrationDb, type OpenedDatabase } from '../../src/state/store/database.js';
import { createMessageIndex, type IndexedMessage, type MessageIndex } from '../../src/state/recall/message-index.js';
import { createSessionStore } from '../../src/state/sessions/session-store.js';
import { systemClock } from '../../src/basics/clock.js';
import { createConversationSearch } from '../../src/state/recall/conversation-search.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * Who finds what with search_conversations, on a SQLite file and on the real PostgreSQL: the
 * visibility rule lives in the query, so each engine is attacked the same way. The secret word
 * "zebrafish" is written in places some people may not see; each search says who finds it.
 */
const pgUrl = await postgresForTests();
const log = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** `before0009`: the tables as the step before the place words (step 0009) left them, then opened (migrated) as usual. */
interface Engine {
  name: string;
  open(): Promise<OpenedDatabase>;
  before0009(): Promise<{ raw: Kysely<unknown>; open(): Promise<OpenedDatabase> }>;
}

const engines: Engine[] = [
  {
    name: 'sqlite',
    async open() {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-recall-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const db = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
      cleanups.push(() => db.close());
      return db;
    },
    async before0009() {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-recall-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'hermes.sqlite');
      const raw = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(file) }) });
      await migrateUpTo(raw, '0008-recall-fts-trigger');
      return {
        raw,
        async open() {
          await raw.destroy();
          const db = await openSqliteDatabase(file);
          cleanups.push(() => db.close());
          return db;
        },
      };
    },
  },
];
if (pgUrl) {
  engines.push({
    name: 'postgres',
    async open() {
      const schema = await freshSchema(pgUrl);
      cleanups.push(() => schema.drop());
      const pool = createPgPool(schema.url);
      cleanups.push(() => pool.end());
      const db = await openPostgresDatabase(pool);
      cleanups.push(() => db.close());
      return db;
    },
    async before0009() {
      const schema = await freshSchema(pgUrl);
      cleanups.push(() => schema.drop());
      const pool = createPgPool(schema.url);
      cleanups.push(() => pool.end());
      const raw = postgresMigrationDb(pool, schema.schema);
      await migrateUpTo(raw, '0008-recall-fts-trigger', { schema: schema.schema });
      return {
        raw,
        async open() {
          await raw.destroy();
          const db = await openPostgresDatabase(pool);
          cleanups.push(() => db.close());
          return db;
        },
      };
    },
  });
}

const slack = (userId: string, workspaceId = 'T1'): Speaker => ({ platform: 'slack', workspaceId, userId, displayName: userId.toLowerCase() });
const place = (channelId: string, extra: Partial<Conversation> = {}): Conversation => ({ platform: 'slack', workspaceId: 'T1', channelId, isDm: false, ...extra });
const A = slack('UA');
const B = slack('UB');
const ADMIN = slack('UADMIN');

/**
 * How a message reaches search: the index's own insert (`record`), or riding on the message's
 * history append, as the gateway writes questions and answers (schema step 0013's trigger).
 * Every rule below is checked both ways.
 */
type Via = 'record' | 'history append';
type Write = (m: IndexedMessage) => Promise<void>;

function writer(via: Via, database: OpenedDatabase, index: MessageIndex): Write {
  if (via === 'record') return (m) => index.record(m);
  const sessions = createSessionStore(database, systemClock);
  return async (m) => {
    const session = await sessions.current(m.conversation);
    const row = index.searchRow(m);
    await sessions.append(session.id, [{ role: m.author === 'bot' ? 'assistant' : 'user', content: m.text }], row && { searchRow: row.json });
    row?.written();
  };
}

let seq = 0;
async function say(write: Write, conversation: Conversation, author: Speaker | 'bot', text: string, dmOwner?: Speaker): Promise<void> {
  seq += 1;
  await write({ id: `m${seq}`, conversation, author, text, at: Date.UTC(2026, 10, 1, 12, 0, seq), ...(dmOwner && { dmOwner }) });
}

for (const engine of engines) for (const via of ['record', 'history append'] as const) {
  describe(`search_conversations privacy (${engine.name}, written by ${via})`, () => {
    async function seeded(maxPlaceWords?: number) {
      const database = await engine.open();
      const index = createMessageIndex({ database, log, ...(maxPlaceWords !== undefined && { maxPlaceWords }) });
      const write = writer(via, database, index);
      const dmA = place('DA', { isDm: true });
      await say(write, dmA, A, 'my locker code is 4411, zebrafish is the password hint');
      await say(write, dmA, 'bot', 'Noted: the zebrafish hint stays between us.', A);
      // A and B both write in #general; A also in a thread B never joined; A alone in a private channel.
      await say(write, place('CGEN'), A, 'general chat about zebrafish tanks');
      await say(write, place('CGEN'), B, 'lunch at noon?');
      await say(write, place('CGEN', { threadId: '171.1' }), A, 'zebrafish plan in a thread only A joined');
      await say(write, place('CPRIV'), A, 'private channel zebrafish project');
      await say(write, place('CGEN', { threadId: '171.2' }), B, 'B thread mentions zebrafish too');
      // The same user id in another workspace is another person.
      await say(write, { ...place('CX'), workspaceId: 'T2' }, slack('UB', 'T2'), 'zebrafish over in T2');
      const search = createConversationSearch({ index });
      return { index, search };
    }

    it("gives B nothing of A's DM, A's thread or A's private channel, whatever B asks", async () => {
      const { search } = await seeded();
      for (const dms of [true, false]) {
        const hits = await search.forSpeaker(B, { dms }).search('zebrafish locker code 4411 password hint', 30);
        const texts = hits.map((h) => h.text);
        expect(texts).not.toContainEqual(expect.stringMatching(/locker|between us|only A joined|private channel|over in T2/));
        // What B may see: the top-level post in the channel B wrote in, and B's own thread.
        expect(texts.sort()).toEqual(['B thread mentions zebrafish too', 'general chat about zebrafish tanks']);
      }
      // FTS syntax typed into the query is just words: no wildcard or column filter reaches the engine.
      for (const q of ['zebrafish" OR *', 'text:zebrafish', 'NEAR(zebrafish locker)', "zebrafish' | !code & x:*", '*']) {
        const texts = (await search.forSpeaker(B, { dms: true }).search(q, 30)).map((h) => h.text);
        expect(texts.every((t) => !/locker|between us|only A joined|private channel/.test(t))).toBe(true);
      }
    });

    it('finds the same for someone in more places than a search narrows by (the rule alone decides then)', async () => {
      // One place word allowed: A (DM, channel, threads) and B (channel, thread) both have more.
      const { search } = await seeded(1);
      const texts = async (who: Speaker, dms: boolean) => (await search.forSpeaker(who, { dms }).search('zebrafish', 30)).map((h) => h.text).sort();
      expect(await texts(B, true)).toEqual(['B thread mentions zebrafish too', 'general chat about zebrafish tanks']);
      expect(await texts(A, true)).toEqual(['Noted: the zebrafish hint stays between us.', 'general chat about zebrafish tanks', 'my locker code is 4411, zebrafish is the password hint', 'private channel zebrafish project', 'zebrafish plan in a thread only A joined']);
      expect(await texts(A, false)).toEqual(['general chat about zebrafish tanks', 'private channel zebrafish project', 'zebrafish plan in a thread only A joined']);
      expect(await texts(ADMIN, true)).toEqual([]);
    });

    it('gives an admin no way into anyone else\'s DM, and an outsider nothing at all', async () => {
      const { search } = await seeded();
      expect(await search.forSpeaker(ADMIN, { dms: true }).search('zebrafish', 30)).toEqual([]);
      expect(await search.forSpeaker({ ...B, platform: 'discord' }, { dms: true }).search('zebrafish', 30)).toEqual([]);
    });

    it('gives A their own DM only when searching from a DM, and the places A took part in', async () => {
      const { search } = await seeded();
      const fromDm = await search.forSpeaker(A, { dms: true }).search('zebrafish', 30);
      expect(fromDm.map((h) => h.text)).toEqual(expect.arrayContaining(['my locker code is 4411, zebrafish is the password hint', 'Noted: the zebrafish hint stays between us.', 'zebrafish plan in a thread only A joined', 'private channel zebrafish project']));
      expect(fromDm.find((h) => h.text.startsWith('Noted'))).toMatchObject({ fromBot: true, place: { isDm: true } });
      expect(fromDm.map((h) => h.text)).not.toContain('B thread mentions zebrafish too');
      const fromChannel = await search.forSpeaker(A, { dms: false }).search('zebrafish', 30);
      expect(fromChannel.some((h) => h.place.isDm)).toBe(false);
      expect(fromChannel.length).toBe(fromDm.length - 2);
      const thread = fromDm.find((h) => h.text.includes('only A joined'))!;
      expect(thread.place).toMatchObject({ channelId: 'CGEN', threadId: '171.1', threadStartedAt: thread.at });
    });

    it("writes who took part where with the message's insert itself (schema step 0011), once, never for DMs or answers", async () => {
      const database = await engine.open();
      const index = createMessageIndex({ database, log });
      const write = writer(via, database, index);
      const discord = (userId: string): Speaker => ({ platform: 'discord', workspaceId: 'G1', userId });
      const members = async () =>
        (await sql<{ member: string; channel_id: string; thread_id: string; since: number }>`select member, channel_id, thread_id, since from hermes_recall_member order by member, channel_id, thread_id`.execute(database.db)).rows.map(
          (r) => `${r.member} ${r.channel_id}/${r.thread_id} ${Number(r.since)}`,
        );
      await write({ id: 'k1', conversation: place('CGEN', { threadId: '9.1' }), author: A, text: 'kelp in a slack thread', at: 1000 });
      // A Discord thread is a channel of its own: writing in it is taking part in its parent's top level too.
      await write({ id: 'k2', conversation: { platform: 'discord', workspaceId: 'G1', channelId: 'TH1', parentChannelId: 'CPARENT', isDm: false }, author: discord('DA'), text: 'kelp in a discord thread', at: 2000 });
      await write({ id: 'k3', conversation: place('DA', { isDm: true }), author: A, text: 'kelp in a DM', at: 3000 });
      await write({ id: 'k4', conversation: place('CGEN', { threadId: '9.1' }), author: 'bot', text: 'kelp answer', at: 4000 });
      // A replay of a stored message (same id) adds nothing, not even a later membership.
      await write({ id: 'k1', conversation: place('CGEN', { threadId: '9.1' }), author: A, text: 'kelp in a slack thread', at: 5000 });
      expect(await members()).toEqual(['discord:G1:DA CPARENT/ 2000', 'discord:G1:DA TH1/ 2000', 'slack:T1:UA CGEN/9.1 1000']);
      // The rule reads them: B sees nothing of A's thread; A finds it, and the Discord writer their thread's parent.
      await write({ id: 'k5', conversation: { platform: 'discord', workspaceId: 'G1', channelId: 'CPARENT', isDm: false }, author: discord('DB'), text: 'kelp at the top of the parent', at: 6000 });
      const search = createConversationSearch({ index });
      expect((await search.forSpeaker(B, { dms: false }).search('kelp', 30)).map((h) => h.text)).toEqual([]);
      expect((await search.forSpeaker(A, { dms: false }).search('kelp', 30)).map((h) => h.text).sort()).toEqual(['kelp answer', 'kelp in a slack thread']);
      expect((await search.forSpeaker(discord('DA'), { dms: false }).search('kelp', 30)).map((h) => h.text).sort()).toEqual(['kelp at the top of the parent', 'kelp in a discord thread']);
    });

    it('messages stored before the place words (schema step 0009) are found by the same rule after the upgrade', async () => {
      const { raw, open } = await engine.before0009();
      // Rows as the index wrote them before: the message (step 0008's trigger adds its full-text row), who took part where.
      const rows: Array<[string, string, string, string | null, string, string]> = [
        // id, channel, thread, dm owner, author, text
        ['o1', 'DA', '', 'slack:T1:UA', 'slack:T1:UA', 'old zebrafish secret in A DM'],
        ['o2', 'CGEN', '', null, 'slack:T1:UA', 'old zebrafish post at the top of general'],
        ['o3', 'CGEN', '171.1', null, 'slack:T1:UA', 'old zebrafish thread only A joined'],
        ['o4', 'CGEN', '171.2', null, 'slack:T1:UB', 'old zebrafish thread of B'],
      ];
      let at = Date.UTC(2026, 9, 1);
      for (const [id, channel, thread, owner, author, text] of rows) {
        at += 1000;
        await sql`insert into hermes_recall_message (id, platform, workspace_id, channel_id, thread_id, parent_channel_id, dm_owner, author, author_name, text, at)
          values (${id}, 'slack', 'T1', ${channel}, ${thread}, null, ${owner}, ${author}, ${author.split(':')[2]!.toLowerCase()}, ${text}, ${at})`.execute(raw);
        if (owner === null) {
          await sql`insert into hermes_recall_member (member, platform, workspace_id, channel_id, thread_id, since) values (${author}, 'slack', 'T1', ${channel}, ${thread}, ${at})
            on conflict do nothing`.execute(raw);
        }
      }
      const database = await open();
      const index = createMessageIndex({ database, log });
      const write = writer(via, database, index);
      // A message after the upgrade, in A's thread, gets its place word from the index itself.
      await say(write, place('CGEN', { threadId: '171.1' }), A, 'new zebrafish reply in the thread of A');
      const search = createConversationSearch({ index });
      const texts = async (who: Speaker, dms: boolean) => (await search.forSpeaker(who, { dms }).search('zebrafish', 30)).map((h) => h.text).sort();
      expect(await texts(A, true)).toEqual(['new zebrafish reply in the thread of A', 'old zebrafish post at the top of general', 'old zebrafish secret in A DM', 'old zebrafish thread only A joined']);
      expect(await texts(A, false)).toEqual(['new zebrafish reply in the thread of A', 'old zebrafish post at the top of general', 'old zebrafish thread only A joined']);
      expect(await texts(B, true)).toEqual(['old zebrafish post at the top of general', 'old zebrafish thread of B']);
      expect(await texts(ADMIN, true)).toEqual([]);
    });

    it('ranks better matches first and breaks ties by time, newest first', async () => {
      const database = await engine.open();
      const index = createMessageIndex({ database, log });
      const write = writer(via, database, index);
      const c = place('CRANK');
      await say(write, c, A, 'the deploy checklist for the payments service lives in the wiki');
      await say(write, c, A, 'deploy went fine');
      await say(write, c, A, 'unrelated lunch talk');
      await say(write, c, A, 'deploy went fine');
      const hits = await createConversationSearch({ index }).forSpeaker(A, { dms: false }).search('payments deploy checklist', 10);
      expect(hits[0]!.text).toMatch(/checklist/);
      expect(hits.map((h) => h.text)).not.toContain('unrelated lunch talk');
      // Two equally good matches: the newer one first.
      const fine = hits.filter((h) => h.text === 'deploy went fine');
      expect(fine.length).toBe(2);
      expect(fine[0]!.at).toBeGreaterThan(fine[1]!.at);
      // A replay of the same message id stores nothing twice.
      await write({ id: `m${seq}`, conversation: c, author: A, text: 'deploy went fine', at: Date.now() });
      expect((await createConversationSearch({ index }).forSpeaker(A, { dms: false }).search('fine', 10)).length).toBe(2);
    });
  });
}

for (const engine of engines) {
  describe(`a search row written by its history append (schema step 0013, ${engine.name})`, () => {
    const columns = 'platform, workspace_id, channel_id, thread_id, parent_channel_id, dm_owner, author, author_name, text, at, place';
    const stored = async (database: OpenedDatabase, id: string) =>
      (await sql<Record<string, unknown>>`select ${sql.raw(columns)} from hermes_recall_message where id = ${id}`.execute(database.db)).rows.map((r) => ({ ...r, at: Number(r.at) }));

    it('stores exactly the row record() stores, empties the history column, and adds nothing for a message search does not keep', async () => {
      const database = await engine.open();
      const index = createMessageIndex({ database, log });
      const sessions = createSessionStore(database, systemClock);
      const recorded: string[] = [];
      index.onRecorded((m) => recorded.push(m.id));
      const append = writer('history append', database, index);
      const discordThread: Conversation = { platform: 'discord', workspaceId: 'G1', channelId: 'TH1', parentChannelId: 'CP', isDm: false };
      const cases: Array<Omit<IndexedMessage, 'id'>> = [
        { conversation: discordThread, author: { platform: 'discord', workspaceId: 'G1', userId: 'D1', displayName: 'Dee' }, text: '  kelp "quoted" \u00e9t\u00e9 \\ 😀  ', at: 1_764_000_000_123.5 },
        { conversation: place('DA', { isDm: true }), author: 'bot', dmOwner: A, text: 'kelp answer in a DM', at: 2000 },
        { conversation: place('CGEN', { threadId: '9.1' }), author: { platform: 'slack', workspaceId: 'T1', userId: 'UNONAME' }, text: 'kelp, no display name', at: 3000 },
      ];
      for (const [i, m] of cases.entries()) {
        await index.record({ ...m, id: `r${i}` });
        await append({ ...m, id: `a${i}` });
        expect(await stored(database, `a${i}`)).toEqual(await stored(database, `r${i}`));
        expect((await stored(database, `a${i}`)).length).toBe(1);
      }
      expect(recorded).toEqual(['r0', 'a0', 'r1', 'a1', 'r2', 'a2']);
      // The JSON is not kept in the history a second time.
      const { rows } = await sql<{ n: number | string }>`select count(*) as n from hermes_message where search_row is not null`.execute(database.db);
      expect(Number(rows[0]!.n)).toBe(0);
      // Not kept for search: no text, or a DM whose owner is unknown. The history append still happens.
      const count = async () => Number((await sql<{ n: number | string }>`select count(*) as n from hermes_recall_message`.execute(database.db)).rows[0]!.n);
      const before = await count();
      expect(index.searchRow({ id: 'x1', conversation: place('CGEN'), author: A, text: '   ', at: 1 })).toBeUndefined();
      expect(index.searchRow({ id: 'x2', conversation: place('DB', { isDm: true }), author: 'bot', text: 'an answer with no owner', at: 1 })).toBeUndefined();
      const s = await sessions.current(place('CGEN'));
      await sessions.append(s.id, [{ role: 'tool', callId: 'c1', name: 'calculator', content: '4' } as never]);
      expect(await count()).toBe(before);
    });

    it('writes no search row when the history row is refused, and the search row of a replay once', async () => {
      const database = await engine.open();
      const index = createMessageIndex({ database, log });
      const row = (id: string) => index.searchRow({ id, conversation: place('CGEN'), author: A, text: `kelp ${id}`, at: 1000 })!.json;
      await sql`insert into hermes_message (session_id, seq, body, search_row) values ('s1', 0, '{}', ${row('q1')})`.execute(database.db);
      // The same place in the history again: the statement fails, and its search row goes with it.
      await expect(sql`insert into hermes_message (session_id, seq, body, search_row) values ('s1', 0, '{}', ${row('q2')})`.execute(database.db)).rejects.toThrow();
      // A replayed message (its id stored already) appended again: the history has it twice, search once.
      await sql`insert into hermes_message (session_id, seq, body, search_row) values ('s1', 1, '{}', ${row('q1')})`.execute(database.db);
      const { rows } = await sql<{ id: string }>`select id from hermes_recall_message order by id`.execute(database.db);
      expect(rows.map((r) => r.id)).toEqual(['q1']);
      const members = await sql<{ n: number | string }>`select count(*) as n from hermes_recall_member`.execute(database.db);
      expect(Number(members.rows[0]!.n)).toBe(1);
      // And it is found, by the person who wrote it only.
      const search = createConversationSearch({ index });
      expect((await search.forSpeaker(A, { dms: false }).search('kelp', 10)).map((h) => h.text)).toEqual(['kelp q1']);
      expect(await search.forSpeaker(B, { dms: false }).search('kelp', 10)).toEqual([]);
    });
  });
}
