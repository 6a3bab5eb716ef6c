import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import pino from 'pino';
import { systemClock } from '../../src/basics/clock.js';
import type { Speaker } from '../../src/basics/types.js';
import { createFactStore, type FactStore } from '../../src/state/memory/fact-store.js';
import { createPgWorkQueue, type PgWorkQueue } from '../../src/state/cluster/pg-work-queue.js';
import { openPostgresDatabase } from '../../src/state/store/database.js';
import { createPostgresStore, type PostgresStore } from '../../src/state/store/postgres-store.js';
import { createTokenCounter } from '../../src/runtime/context/token-counter.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * A speaker's facts kept in memory per instance on PostgreSQL (fact-store.ts, FactStoreOptions
 * .invalidations): two instances, each with its own pool and its own LISTEN connection (a real work
 * queue's), on one real database. What is kept must never outlive a change made on any instance,
 * must never be used while the instance is deaf, and must never cross from one user to another.
 */
const pgUrl = await postgresForTests();
const log = pino({ level: 'silent' });
const counter = createTokenCounter('gpt-4o-mini');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Instance {
  facts: FactStore;
  queue: PgWorkQueue<string>;
  store: PostgresStore;
  /** Reads of the key-value store made by this instance. */
  reads(): number;
}

async function instance(url: string, name: string, cacheMax?: number): Promise<Instance> {
  // The LISTEN connection carries the instance's name, so a test can cut it alone.
  const listenUrl = new URL(url);
  listenUrl.searchParams.set('application_name', `listen-${name}`);
  const store = await createPostgresStore({ url, log });
  cleanups.push(() => store.close());
  const database = await openPostgresDatabase(store.pool, log);
  cleanups.push(() => database.close());
  const queue = createPgWorkQueue<string>({ database, url: listenUrl.toString(), instanceId: name, clock: systemClock, log, maxConcurrent: () => 1, leaseMs: 1_000, pollMs: 100, settleMs: 0, presenceMs: 200 });
  cleanups.push(() => queue.close());
  await queue.start(async () => undefined);
  await until(() => queue.invalidations.live());
  let reads = 0;
  const counted = { ...store, get: <T>(key: string) => (reads++, store.get<T>(key)) };
  return { facts: createFactStore(counted, systemClock, { invalidations: queue.invalidations, ...(cacheMax && { cacheMax }) }), queue, store, reads: () => reads };
}

async function twoInstances(): Promise<{ a: Instance; b: Instance; url: string; schema: string }> {
  const schema = await freshSchema(pgUrl!);
  cleanups.push(() => schema.drop());
  return { a: await instance(schema.url, `a-${schema.schema}`), b: await instance(schema.url, `b-${schema.schema}`), url: schema.url, schema: schema.schema };
}

const speaker = (userId: string, workspaceId = 'T1'): Speaker => ({ platform: 'slack', workspaceId, userId });
const texts = async (facts: FactStore, s: Speaker) => (await facts.promptFacts(s, 'anything', 1_000, counter)).map((f) => f.text);
/** A write no instance hears of: straight into the table, no notification. */
async function behindTheirBacks(store: PostgresStore, s: Speaker, text: string): Promise<void> {
  const key = `facts:${encodeURIComponent(`slack:T1:${s.userId}`)}`;
  const r = await store.pool.query(`UPDATE hermes_kv SET value = $2 WHERE key = $1`, [key, JSON.stringify({ v: 1, facts: [{ id: 'f00000', text, createdAt: 1, updatedAt: 1 }] })]);
  expect(r.rowCount).toBe(1);
}

describe.skipIf(!pgUrl)("a speaker's facts kept in memory on two instances (PostgreSQL)", () => {
  it('reads them once, and sees on every instance a change made on any instance at its next turn', async () => {
    const { a, b } = await twoInstances();
    const alice = speaker('U_ALICE');
    // B's turn reads them (none yet) and keeps that: its next turn reads nothing.
    expect(await texts(b.facts, alice)).toEqual([]);
    const before = b.reads();
    expect(await texts(b.facts, alice)).toEqual([]);
    expect(b.reads()).toBe(before);
    // A tool on A remembers a fact: B's next turn sees it (without A's notification B keeps "none").
    await a.facts.forUser(alice).remember('Alice prefers tea');
    await until(async () => (await texts(b.facts, alice)).includes('Alice prefers tea'));
    // Kept again once read: a change nobody was told of is not seen, so the copy is really used.
    await behindTheirBacks(b.store, alice, 'changed behind their backs');
    expect(await texts(b.facts, alice)).toEqual(['Alice prefers tea']);
    // Forgetting on B reaches A, one fact and then all (A reads the table's current list first).
    const [changed] = await a.facts.list(alice);
    expect(changed?.text).toBe('changed behind their backs');
    await b.facts.forUser(alice).remember('Alice lives in Lisbon');
    await until(async () => (await texts(a.facts, alice)).length === 2);
    expect(await b.facts.forget(alice, changed!.id)).toBe(1);
    await until(async () => (await texts(a.facts, alice)).join() === 'Alice lives in Lisbon');
    expect(await b.facts.forget(alice, 'all')).toBe(1);
    await until(async () => (await a.facts.list(alice)).length === 0);
    expect(await texts(a.facts, alice)).toEqual([]);
  });

  it("never shows one user another's kept facts, even with ids built to collide", async () => {
    const { a, b } = await twoInstances();
    const alice = speaker('U1', 'T1');
    await a.facts.forUser(alice).remember('the vault code is kept by Alice');
    // Kept on A and B for Alice.
    expect(await texts(a.facts, alice)).toEqual(['the vault code is kept by Alice']);
    expect(await texts(b.facts, alice)).toEqual(['the vault code is kept by Alice']);
    // Speakers whose ids, naively joined, would spell Alice's key or match it by prefix.
    const attackers = [speaker('U1', 'T1:'), speaker('T1:U1', ''), speaker('U', 'T1:U1'), speaker('U1%', 'T1'), speaker('U1_', 'T1'), speaker('', 'T1:U1'), { ...alice, platform: 'discord' as const }];
    for (const mallory of attackers) {
      for (const i of [a, b]) {
        expect(await texts(i.facts, mallory)).toEqual([]);
        expect(await i.facts.list(mallory)).toEqual([]);
        expect(await i.facts.forUser(mallory).recall('vault')).toEqual([]);
      }
      // Their own writes and forgets touch only their own facts, on every instance.
      await b.facts.forUser(mallory).remember('the vault code is 1234');
      expect(await b.facts.forget(mallory, 'all')).toBe(1);
    }
    await until(async () => (await texts(a.facts, alice)).join() === 'the vault code is kept by Alice' && (await texts(b.facts, alice)).join() === 'the vault code is kept by Alice');
    for (const i of [a, b]) expect(await i.facts.list(alice)).toHaveLength(1);
  });

  it('drops everything it kept when its LISTEN connection is lost, and reads on every turn until it is back', async () => {
    const { a, b, url, schema } = await twoInstances();
    const alice = speaker('U_ALICE');
    await a.facts.forUser(alice).remember('Alice prefers tea');
    expect(await texts(b.facts, alice)).toEqual(['Alice prefers tea']);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    cleanups.push(() => admin.end());
    const cut = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`listen-b-${schema}`]);
    expect(cut.rowCount).toBe(1);
    await until(() => !b.queue.invalidations.live());
    // Deaf: a change it could not hear of is seen anyway, on every read.
    await behindTheirBacks(a.store, alice, 'changed while B was deaf');
    expect(await texts(b.facts, alice)).toEqual(['changed while B was deaf']);
    const deaf = b.reads();
    expect(await texts(b.facts, alice)).toEqual(['changed while B was deaf']);
    expect(b.reads()).toBe(deaf + 1);
    // Back: what it kept before is gone (not the tea), and it keeps again.
    await until(() => b.queue.invalidations.live());
    expect(await texts(b.facts, alice)).toEqual(['changed while B was deaf']);
    const back = b.reads();
    expect(await texts(b.facts, alice)).toEqual(['changed while B was deaf']);
    expect(b.reads()).toBe(back);
  });

  it('keeps at most cacheMax users, the least recently read leaving first', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const a = await instance(schema.url, `small-${schema.schema}`, 2);
    const [u1, u2, u3] = [speaker('U_1'), speaker('U_2'), speaker('U_3')];
    const heard = a.queue.invalidations.generation();
    for (const u of [u1, u2, u3]) await a.facts.forUser(u).remember(`fact of ${u.userId}`);
    // Its own three writes' notifications are heard before it reads (they would drop what it reads).
    await until(() => a.queue.invalidations.generation() >= heard + 3);
    for (const u of [u1, u2, u1, u3]) await texts(a.facts, u);
    // U_2 was read least recently, so it left when U_3 came; U_1 and U_3 are kept.
    const before = a.reads();
    await texts(a.facts, u1);
    await texts(a.facts, u3);
    expect(a.reads()).toBe(before);
    await texts(a.facts, u2);
    expect(a.reads()).toBe(before + 1);
  });
});

async function until(pred: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
