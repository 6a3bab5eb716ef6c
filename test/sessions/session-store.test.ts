import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import type { ChatMessage, Conversation } from '../../src/basics/types.js';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { storeKey, type Store } from '../../src/state/store/store.js';
import { createSessionStore, HISTORY_PAGE_SIZE } from '../../src/state/sessions/session-store.js';

let dir: string;
let file: string;
const open: Store[] = [];

async function openSqlite(): Promise<Store> {
  const store = await createSqliteStore({ file });
  open.push(store);
  return store;
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-sessions-'));
  file = path.join(dir, 'hermes.sqlite');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close().catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

const channel: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'C_1', threadId: '1700.01', isDm: false };
const user = (text: string): ChatMessage => ({ role: 'user', content: text });

describe('session store', () => {
  it('keeps the session and its history across a reopen of the SQLite file', async () => {
    const first = await createSqliteStore({ file });
    const sessions = createSessionStore(first, systemClock);
    const session = await sessions.current(channel);
    await sessions.append(session.id, [user('hello'), { role: 'assistant', content: 'hi', toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }] }]);
    await sessions.append(session.id, [{ role: 'tool', toolCallId: 'c1', name: 'calculator', content: '2' }]);
    await sessions.setSummary(session.id, 'they said hello', 1);
    await first.close();

    const reopened = createSessionStore(await openSqlite(), systemClock);
    const again = await reopened.current(channel);
    expect(again.id).toBe(session.id);
    expect(again.summary).toBe('they said hello');
    expect(again.summarizedUpTo).toBe(1);
    expect((await reopened.history(session.id)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(await reopened.history(session.id, 1)).toHaveLength(2);
  });

  it('returns 1,000 appended messages in order, and any suffix of them', async () => {
    const sessions = createSessionStore(await openSqlite(), systemClock);
    const { id } = await sessions.current(channel);
    for (let i = 0; i < 1000; i += 1) await sessions.append(id, [user(`m${i}`)]);
    const all = await sessions.history(id);
    expect(all.map((m) => m.content)).toEqual(Array.from({ length: 1000 }, (_, i) => `m${i}`));
    expect((await sessions.history(id, 995)).map((m) => m.content)).toEqual(['m995', 'm996', 'm997', 'm998', 'm999']);
    expect(await sessions.history(id, 5000)).toEqual([]);
  });

  it('writes a bounded amount per append however long the history is', async () => {
    const inner = createMemoryStore();
    const writes: number[] = [];
    const counting: Store = {
      ...inner,
      set: (key, value, ttl) => {
        writes.push(JSON.stringify(value).length);
        return inner.set(key, value, ttl);
      },
    };
    const sessions = createSessionStore(counting, systemClock);
    const { id } = await sessions.current(channel);
    const message = user('x'.repeat(100));
    const perAppend: number[] = [];
    for (let i = 0; i < 600; i += 1) {
      writes.length = 0;
      await sessions.append(id, [message]);
      perAppend.push(writes.reduce((a, b) => a + b, 0));
    }
    const onePageBytes = JSON.stringify(Array(HISTORY_PAGE_SIZE).fill(message)).length;
    expect(Math.max(...perAppend)).toBeLessThanOrEqual(onePageBytes + 20);
    expect(await sessions.history(id)).toHaveLength(600);
  });

  it('ignores a page written past the head by a crash, and the next append overwrites it', async () => {
    const store = createMemoryStore();
    const sessions = createSessionStore(store, systemClock);
    const { id } = await sessions.current(channel);
    const full = Array.from({ length: HISTORY_PAGE_SIZE }, (_, i) => user(`m${i}`));
    await sessions.append(id, full);
    // A crash after the next page was written but before the head pointer moved to it:
    await store.set(storeKey('session', 'page', id, '1'), [user('debris')]);
    expect(await sessions.history(id)).toHaveLength(HISTORY_PAGE_SIZE);
    await sessions.append(id, [user('c')]);
    const all = await sessions.history(id);
    expect(all.map((m) => m.content)).toEqual([...full.map((m) => m.content), 'c']);
  });

  it('writes one key for an ordinary append and two when a page fills', async () => {
    const inner = createMemoryStore();
    const keys: string[] = [];
    const counting: Store = { ...inner, set: (key, value, ttl) => { keys.push(key); return inner.set(key, value, ttl); } };
    const sessions = createSessionStore(counting, systemClock);
    const { id } = await sessions.current(channel);
    keys.length = 0;
    await sessions.append(id, [user('one')]);
    expect(keys).toHaveLength(1);
    keys.length = 0;
    await sessions.append(id, Array.from({ length: HISTORY_PAGE_SIZE }, (_, i) => user(`n${i}`)));
    expect(keys).toHaveLength(3); // page 0 completed, page 1 started, head moved
    expect(await sessions.history(id)).toHaveLength(HISTORY_PAGE_SIZE + 1);
  });

  it('archives the old session on startNew and starts empty', async () => {
    const sessions = createSessionStore(await openSqlite(), systemClock);
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
    const sessions = createSessionStore(await openSqlite(), systemClock);
    const convs: Conversation[] = [
      channel,
      { ...channel, threadId: undefined },
      { ...channel, channelId: 'C%1' },
      { ...channel, channelId: "C'1", threadId: '1700:01' },
      { ...channel, channelId: 'C"1' },
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

  it('creates one session when many callers ask for a new conversation at once', async () => {
    const sessions = createSessionStore(createMemoryStore(), systemClock);
    const ids = await Promise.all(Array.from({ length: 20 }, () => sessions.current(channel).then((s) => s.id)));
    expect(new Set(ids).size).toBe(1);
  });

  it('claims an inbound message once, also across a reopen', async () => {
    const first = await createSqliteStore({ file });
    const sessions = createSessionStore(first, systemClock);
    const claims = await Promise.all(Array.from({ length: 10 }, () => sessions.claimInbound('slack', 'C1:1700.01')));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await sessions.claimInbound('slack', 'C1:1700.01')).toBe(false);
    expect(await sessions.claimInbound('discord', 'C1:1700.01')).toBe(true);
    await first.close();

    const reopened = createSessionStore(await openSqlite(), systemClock);
    expect(await reopened.claimInbound('slack', 'C1:1700.01')).toBe(false);
    expect(await reopened.claimInbound('slack', 'C1:1700.02')).toBe(true);
  });

  it('remembers joined threads across a reopen, per conversation', async () => {
    const first = await createSqliteStore({ file });
    const sessions = createSessionStore(first, systemClock);
    expect(await sessions.isJoined(channel)).toBe(false);
    await sessions.markJoined(channel);
    await first.close();

    const reopened = createSessionStore(await openSqlite(), systemClock);
    expect(await reopened.isJoined(channel)).toBe(true);
    expect(await reopened.isJoined({ ...channel, threadId: '1700.02' })).toBe(false);
  });

  it('refuses a summary for a session that does not exist', async () => {
    const sessions = createSessionStore(createMemoryStore(), systemClock);
    await expect(sessions.setSummary('nope', 's', 1)).rejects.toThrow(/does not exist/);
    expect(await sessions.get('nope')).toBeUndefined();
  });
});
