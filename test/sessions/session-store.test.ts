import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import { conversationKey, type ChatMessage, type Conversation } from '../../src/basics/types.js';
import { createSessionStore } from '../../src/state/sessions/session-store.js';
import { SESSION_TAKEN } from '../../src/state/store/session-schema.js';
import { storeEngines } from '../helpers/store-engines.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** The session tables on each engine: a SQLite file, and the real PostgreSQL when there is one. */
const engines = await storeEngines('sessions', cleanups);

const channel: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'C_1', threadId: '1700.01', isDm: false };
const user = (text: string): ChatMessage => ({ role: 'user', content: text });

describe.each(engines)('session store ($name)', ({ name, open }) => {
  it('keeps the session and its history across a reopen', async () => {
    const place = await open();
    const sessions = createSessionStore(place.database, systemClock);
    const session = await sessions.current(channel);
    await sessions.append(session.id, [user('hello'), { role: 'assistant', content: 'hi', toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }] }]);
    await sessions.append(session.id, [{ role: 'tool', toolCallId: 'c1', name: 'calculator', content: '2' }]);
    await sessions.setSummary(session.id, 'they said hello', 1);
    await place.database.close();

    const reopened = createSessionStore(await place.reopen(), systemClock);
    const again = await reopened.current(channel);
    expect(again.id).toBe(session.id);
    expect(again.summary).toBe('they said hello');
    expect(again.summarizedUpTo).toBe(1);
    expect((await reopened.history(session.id)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(await reopened.history(session.id, 1)).toHaveLength(2);
    // One read gives the session and the part of its history the summary does not cover.
    const loaded = await reopened.withHistory(session.id);
    expect(loaded?.session).toEqual(again);
    expect(loaded?.history.map((m) => m.role)).toEqual(['assistant', 'tool']);
    expect(loaded?.history[0]).toEqual({ role: 'assistant', content: 'hi', toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }] });
    expect(await reopened.withHistory('nope')).toBeUndefined();
  });

  it('returns 300 appended messages in order, and any suffix of them', async () => {
    const sessions = createSessionStore((await open()).database, systemClock);
    const { id } = await sessions.current(channel);
    // Alternately one message and a batch of five per append.
    for (let i = 0, j = 0; i < 300; j++) {
      const n = Math.min(j % 2 === 0 ? 1 : 5, 300 - i);
      await sessions.append(id, Array.from({ length: n }, (_, k) => user(`m${i + k}`)));
      i += n;
    }
    const all = await sessions.history(id);
    expect(all.map((m) => m.content)).toEqual(Array.from({ length: 300 }, (_, i) => `m${i}`));
    expect((await sessions.history(id, 295)).map((m) => m.content)).toEqual(['m295', 'm296', 'm297', 'm298', 'm299']);
    expect(await sessions.history(id, 5000)).toEqual([]);
    const { session } = (await sessions.withHistory(id))!;
    expect(session.summarizedUpTo).toBe(0);
    await sessions.setSummary(id, 'the first 290', 290);
    expect((await sessions.withHistory(id))!.history.map((m) => m.content)).toEqual(Array.from({ length: 10 }, (_, i) => `m${290 + i}`));
  });

  it('writes only the new rows per append however long the history is: one statement for one message', async () => {
    const { database } = await open();
    const sessions = createSessionStore(database, systemClock);
    const { id } = await sessions.current(channel);
    for (let i = 0; i < 200; i += 1) await sessions.append(id, [user(`m${i}`)]);
    const before = database.stats.queries;
    await sessions.append(id, [user('one more')]);
    expect(database.stats.queries - before).toBe(1);
    const beforeTwo = database.stats.queries;
    await sessions.append(id, [user('a'), user('b')]);
    // One transaction: the next number and the rows; on PostgreSQL also its BEGIN and COMMIT. On
    // SQLite it is a savepoint in the event-loop turn's group commit (sqlite-group-commit.ts).
    expect(database.stats.queries - beforeTwo).toBe(database.dialect === 'sqlite' ? 2 : 4);
    expect((await sessions.history(id, 200)).map((m) => m.content)).toEqual(['one more', 'a', 'b']);
  });

  it('archives the old session on startNew and starts empty', async () => {
    const sessions = createSessionStore((await open()).database, systemClock);
    const old = await sessions.current(channel);
    await sessions.append(old.id, [user('old stuff')]);
    const fresh = await sessions.startNew(channel);
    expect(fresh.id).not.toBe(old.id);
    expect((await sessions.current(channel)).id).toBe(fresh.id);
    expect(await sessions.history(fresh.id)).toEqual([]);
    expect(await sessions.archived(channel)).toEqual([old.id]);
    expect((await sessions.history(old.id)).map((m) => m.content)).toEqual(['old stuff']);
    const third = await sessions.startNew(channel);
    expect(await sessions.archived(channel)).toEqual([old.id, fresh.id]);
    expect(third.id).not.toBe(fresh.id);
  });

  it('keeps conversations apart, including ids with _ % : and quotes', async () => {
    const sessions = createSessionStore((await open()).database, systemClock);
    const convs: Conversation[] = [
      channel,
      { ...channel, threadId: undefined },
      { ...channel, channelId: 'C%1' },
      { ...channel, channelId: "C'1", threadId: '1700:01' },
      { ...channel, channelId: 'C"1' },
      { ...channel, channelId: 'C_1%' },
      { ...channel, platform: 'discord' },
    ];
    const ids = await Promise.all(convs.map((c) => sessions.current(c).then((s) => s.id)));
    expect(new Set(ids).size).toBe(convs.length);
    await Promise.all(ids.map((id, i) => sessions.append(id, [user(`marker-${i}`)])));
    for (const [i, id] of ids.entries()) {
      expect((await sessions.history(id)).map((m) => m.content)).toEqual([`marker-${i}`]);
    }
    await sessions.startNew(convs[2]!);
    expect(await sessions.archived(convs[0]!)).toEqual([]);
  });

  it('creates one session when many callers ask for a new conversation at once, also from two handles', async () => {
    const place = await open();
    const one = createSessionStore(place.database, systemClock);
    // One process owns a SQLite file (one handle); instances share a PostgreSQL database.
    const two = createSessionStore(name === 'postgres' ? await place.reopen() : place.database, systemClock);
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).current(channel).then((s) => s.id)));
    expect(new Set(ids).size).toBe(1);
    expect(await place.database.db.selectFrom('hermes_session').select('id').execute()).toEqual([{ id: ids[0] }]);
  });

  it("starts a conversation's first session in one statement, which writes nothing when one is live already", async () => {
    const place = await open();
    const db = place.database.db;
    const sessions = createSessionStore(place.database, systemClock);
    const first = await sessions.current(channel, { join: true });
    expect(first.created).toBe(true);
    expect(await db.selectFrom('hermes_conversation').selectAll().execute()).toEqual([{ key: first.conversationKey, current_session: first.id, joined: 1 }]);
    // A second start for the same conversation (another instance that read before the first wrote) is refused whole.
    await expect(db.insertInto('hermes_session_start').values({ id: 'late', conversation_key: first.conversationKey, created_at: 1, joined: 0 }).execute()).rejects.toThrow(SESSION_TAKEN);
    expect((await db.selectFrom('hermes_session').select('id').execute()).map((r) => r.id)).toEqual([first.id]);
    // A conversation marked joined before it had a session keeps the join when one starts without it.
    const other = { ...channel, threadId: '1700.09' };
    await sessions.markJoined(other);
    const second = await createSessionStore(place.database, systemClock).current(other);
    const row = await db.selectFrom('hermes_conversation').selectAll().where('current_session', '=', second.id).executeTakeFirst();
    expect(row?.joined).toBe(1);
    // Two stores racing for a new conversation, one joining: one session, no row left over, joined.
    const third = { ...channel, threadId: '1700.10' };
    const a = createSessionStore(place.database, systemClock);
    const b = createSessionStore(name === 'postgres' ? await place.reopen() : place.database, systemClock);
    const [x, y] = await Promise.all([a.current(third), b.current(third, { join: true })]);
    expect(x.id).toBe(y.id);
    expect(await db.selectFrom('hermes_session').select('id').where('conversation_key', '=', x.conversationKey).execute()).toEqual([{ id: x.id }]);
    expect(await createSessionStore(place.database, systemClock).isJoined(third)).toBe(true);
  });

  it('starts the session of a conversation its message opens in one statement, and reads the live one when the guess was wrong', async () => {
    const place = await open();
    const { database } = place;
    const db = database.db;
    const sessions = createSessionStore(database, systemClock);
    const opened = { ...channel, threadId: '1700.20' };
    let before = database.stats.queries;
    const first = await sessions.current(opened, { join: true, opens: true });
    expect(database.stats.queries - before).toBe(1);
    expect(first.created).toBe(true);
    expect(await db.selectFrom('hermes_conversation').selectAll().where('key', '=', first.conversationKey).execute()).toEqual([{ key: first.conversationKey, current_session: first.id, joined: 1 }]);
    // Wrong guess (a session is live already, here from another store): the refused start, then the read; nothing left behind.
    const other = createSessionStore(database, systemClock);
    before = database.stats.queries;
    const again = await other.current(opened, { join: true, opens: true });
    expect(database.stats.queries - before).toBe(2);
    expect(again.id).toBe(first.id);
    expect(again.created).toBeUndefined();
    expect((await db.selectFrom('hermes_session').select('id').where('conversation_key', '=', first.conversationKey).execute()).map((r) => r.id)).toEqual([first.id]);
    // Without the guess a live session costs the one read.
    before = database.stats.queries;
    expect((await sessions.current(opened)).id).toBe(first.id);
    expect(database.stats.queries - before).toBe(1);
  });

  // PostgreSQL: the opening start itself says whether the conversation was joined before it, so a
  // turn skips the noted-messages read only when none can be there (gateway.ts). SQLite answers
  // that read from memory and says nothing here.
  it('tells from an opening start alone whether the conversation was joined before it', async () => {
    const place = await open();
    const sessions = createSessionStore(place.database, systemClock);
    const fresh = await sessions.current({ ...channel, threadId: '1700.30' }, { join: true, opens: true });
    expect(fresh.created).toBe(true);
    expect(fresh.neverJoined).toBe(name === 'postgres' ? true : undefined);
    // Joined by an answer outside any turn (another instance), then opened: the start says so.
    const joinedFirst = { ...channel, threadId: '1700.31' };
    await createSessionStore(name === 'postgres' ? await place.reopen() : place.database, systemClock).markJoined(joinedFirst);
    const started = await createSessionStore(place.database, systemClock).current(joinedFirst, { join: true, opens: true });
    expect(started.created).toBe(true);
    expect(started.neverJoined).toBeUndefined();
    // A conversation row that is there unjoined, with no session: never joined.
    const unjoined = { ...channel, threadId: '1700.32' };
    await place.database.db.insertInto('hermes_conversation').values({ key: conversationKey(unjoined), current_session: null, joined: 0 }).execute();
    const restarted = await createSessionStore(place.database, systemClock).current(unjoined, { opens: true });
    expect(restarted.created).toBe(true);
    expect(restarted.neverJoined).toBe(name === 'postgres' ? true : undefined);
  });

  it('remembers joined threads across a reopen, per conversation', async () => {
    const place = await open();
    const sessions = createSessionStore(place.database, systemClock);
    expect(await sessions.isJoined(channel)).toBe(false);
    await sessions.markJoined(channel);
    await sessions.markJoined(channel);
    // Joining does not make a session, and a session made later keeps the join.
    expect(await place.database.db.selectFrom('hermes_session').select('id').execute()).toEqual([]);
    await sessions.current(channel);
    await place.database.close();

    const reopened = createSessionStore(await place.reopen(), systemClock);
    expect(await reopened.isJoined(channel)).toBe(true);
    expect(await reopened.isJoined({ ...channel, threadId: '1700.02' })).toBe(false);
  });

  it('refuses a summary for a session that does not exist', async () => {
    const sessions = createSessionStore((await open()).database, systemClock);
    await expect(sessions.setSummary('nope', 's', 1)).rejects.toThrow(/does not exist/);
    expect(await sessions.get('nope')).toBeUndefined();
  });
});
