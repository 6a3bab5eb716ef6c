import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/basics/clock.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { canonicalJson, createApprovalStore, hashArgs, type NewApproval } from '../../src/state/approvals/approval-store.js';
import { engineWanted } from '../helpers/postgres.js';
import { storeEngines } from '../helpers/store-engines.js';

function manualClock(start = 1_700_000_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return { now: () => now, setTimer: () => () => undefined, advance: (ms) => void (now += ms) };
}

const conversation: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: '1.2', isDm: false };
const alice: Speaker = { platform: 'slack', workspaceId: 'T1', userId: 'U_alice', displayName: 'alice' };
const bob: Speaker = { platform: 'slack', workspaceId: 'T1', userId: 'U%bob' };

function input(clock: Clock, over: Partial<NewApproval> = {}): NewApproval {
  return {
    sessionId: 'slack:T1:C1:1.2#s1',
    conversation,
    turnId: 'turn-1',
    toolCallId: 'call_1',
    toolName: 'send_webhook',
    args: { url: 'https://example.com/hook', body: { text: 'deploy', n: 1 }, method: 'POST' },
    requester: alice,
    expiresAt: clock.now() + 30 * 60_000,
    ...over,
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** The approval table on each engine: a SQLite file, and the real PostgreSQL when there is one. */
const engines = await storeEngines('approvals', cleanups);

describe.each(engines)('approval store ($name)', ({ name, open }) => {
  it('stores a pending record that survives a reopen and is decided exactly once after it', async () => {
    const clock = manualClock();
    const place = await open();
    const created = await createApprovalStore(place.database, clock).create(input(clock));
    expect(created.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(created.status).toBe('pending');
    expect(created.createdAt).toBe(clock.now());
    expect(created.argsHash).toBe(hashArgs(created.args));
    expect(created.argsHash).toMatch(/^[0-9a-f]{64}$/);
    await place.database.close();

    const approvals = createApprovalStore(await place.reopen(), clock);
    const read = await approvals.get(created.id);
    expect(read).toEqual(created);
    expect(read?.tampered).toBeUndefined();
    expect((await approvals.listOpen()).map((r) => r.id)).toEqual([created.id]);

    const win = await approvals.decide(created.id, 'approved', bob);
    expect(win.applied).toBe(true);
    expect(win.record).toMatchObject({ status: 'approved', decidedBy: bob, decidedAt: clock.now() });
    const again = await approvals.decide(created.id, 'denied', alice);
    expect(again).toMatchObject({ applied: false, record: { status: 'approved', decidedBy: bob } });
  });

  it('applies exactly one of 50 concurrent decisions, from two handles (two instances on PostgreSQL)', async () => {
    const clock = manualClock();
    const place = await open();
    const one = createApprovalStore(place.database, clock);
    // One process owns a SQLite file (one handle); instances share a PostgreSQL database.
    const two = createApprovalStore(name === 'postgres' ? await place.reopen() : place.database, clock);
    const { id } = await one.create(input(clock));
    const deciders = Array.from({ length: 50 }, (_, i): Speaker => ({ ...bob, userId: `U${i}` }));
    const results = await Promise.all(deciders.map((by, i) => (i % 3 ? one : two).decide(id, i % 2 ? 'denied' : 'approved', by)));
    const winners = results.filter((r) => r.applied);
    expect(winners).toHaveLength(1);
    const final = await one.get(id);
    expect(final?.status).toBe(winners[0]!.record!.status);
    expect(final?.decidedBy).toEqual(winners[0]!.record!.decidedBy);
  });

  it('commits the decision with what it sets off, or neither', async () => {
    const clock = manualClock();
    const place = await open();
    const approvals = createApprovalStore(place.database, clock);
    const { id } = await approvals.create(input(clock));
    const { db } = place.database;
    // What it sets off fails (a crash mid-transaction has the same effect): the decision is not kept.
    await expect(
      approvals.decide(id, 'approved', alice, async (tx) => {
        await tx.insertInto('hermes_inbound').values({ platform: 't', id: 'marker', outcome: 'queued', accepted_at: 1 }).execute();
        throw new Error('cut off');
      }),
    ).rejects.toThrow('cut off');
    expect((await approvals.get(id))?.status).toBe('pending');
    expect(await db.selectFrom('hermes_inbound').selectAll().execute()).toEqual([]);
    // It succeeds: both are there. A second decision sets nothing off.
    const calls: string[] = [];
    const decide = (by: Speaker) =>
      approvals.decide(id, 'approved', by, async (tx, r) => {
        calls.push(r.status);
        await tx.insertInto('hermes_inbound').values({ platform: 't', id: `resume:${r.id}`, outcome: 'queued', accepted_at: 1 }).execute();
      });
    expect((await decide(alice)).applied).toBe(true);
    expect((await decide(bob)).applied).toBe(false);
    expect(calls).toEqual(['approved']);
    expect((await db.selectFrom('hermes_inbound').select('id').execute()).map((r) => r.id)).toEqual([`resume:${id}`]);
  });

  it('lets the gateway see an expiry that has passed, and expire it once', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore((await open()).database, clock);
    const created = await approvals.create(input(clock, { expiresAt: clock.now() + 1_000 }));
    clock.advance(1_001);
    const read = await approvals.get(created.id);
    expect(clock.now()).toBeGreaterThan(read!.expiresAt);
    expect((await approvals.decide(created.id, 'expired')).applied).toBe(true);
    expect((await approvals.decide(created.id, 'approved', alice)).applied).toBe(false);
    expect((await approvals.get(created.id))?.status).toBe('expired');
    expect(await approvals.listOpen()).toEqual([]);
  });

  it('runs an approved call at most once: markRunning twice gives false the second time', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore((await open()).database, clock);
    const { id } = await approvals.create(input(clock));
    expect(await approvals.markRunning(id)).toBe(false); // still pending
    await approvals.decide(id, 'approved', alice);
    const [a, b] = await Promise.all([approvals.markRunning(id), approvals.markRunning(id)]);
    expect([a, b].sort()).toEqual([false, true]);
    expect(await approvals.markRunning(id)).toBe(false);
    await approvals.markDone(id, 'HTTP 200');
    expect(await approvals.get(id)).toMatchObject({ status: 'done', resultSummary: 'HTTP 200' });
    await approvals.markUnknown(id);
    expect((await approvals.get(id))?.status).toBe('done');
  });

  it('turns an interrupted run into unknown and never back into running', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore((await open()).database, clock);
    const { id } = await approvals.create(input(clock));
    await approvals.decide(id, 'approved', alice);
    await approvals.markRunning(id);
    await approvals.markUnknown(id);
    expect((await approvals.get(id))?.status).toBe('unknown');
    expect(await approvals.markRunning(id)).toBe(false);
    expect(await approvals.listOpen()).toEqual([]);
  });

  it('lists exactly the open requests through every kind of decision, oldest first', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore((await open()).database, clock);
    const ids: string[] = [];
    for (const sessionId of ['s1', 's1', 's1', 's1', 's1', 's1', 's1', 's2']) {
      clock.advance(1);
      ids.push((await approvals.create(input(clock, { sessionId }))).id);
    }
    const [denied, expired, cancelled, approved, running, done, pending, other] = ids;
    await approvals.decide(denied!, 'denied', alice);
    await approvals.decide(expired!, 'expired');
    await approvals.decide(cancelled!, 'cancelled', alice);
    await approvals.decide(approved!, 'approved', alice);
    await approvals.decide(running!, 'approved', alice);
    await approvals.markRunning(running!);
    await approvals.decide(done!, 'approved', alice);
    await approvals.markRunning(done!);
    await approvals.markDone(done!, 'ok');

    const listed = await approvals.listOpen();
    expect(listed.map((r) => r.id)).toEqual([approved, running, pending, other]);
    expect((await approvals.openForSession('s1')).map((r) => r.id)).toEqual([approved, running, pending]);
    expect((await approvals.openForSession('s2')).map((r) => r.id)).toEqual([other]);
  });

  it('refuses a record whose stored arguments no longer match their hash', async () => {
    const clock = manualClock();
    const { database } = await open();
    const approvals = createApprovalStore(database, clock);
    const created = await approvals.create(input(clock));
    const row = await database.db.selectFrom('hermes_approval').select('record').where('id', '=', created.id).executeTakeFirstOrThrow();
    const changed = { ...JSON.parse(row.record), args: { url: 'https://evil.example/', body: {} } };
    await database.db.updateTable('hermes_approval').set({ record: JSON.stringify(changed) }).where('id', '=', created.id).execute();

    const read = await approvals.get(created.id);
    expect(read?.tampered).toBe(true);
    const decision = await approvals.decide(created.id, 'approved', alice);
    expect(decision.applied).toBe(false);
    expect((await approvals.get(created.id))?.status).toBe('pending');
    expect(await approvals.markRunning(created.id)).toBe(false);
    expect((await approvals.listOpen())[0]?.tampered).toBe(true);
  });

  it('stores the prompt message reference without undoing a decision, and refuses one for an unknown id', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore((await open()).database, clock);
    const { id } = await approvals.create(input(clock));
    await Promise.all([approvals.setMessageRef(id, 'C1:1700000000.000100'), approvals.decide(id, 'approved', alice)]);
    expect(await approvals.get(id)).toMatchObject({ messageRef: 'C1:1700000000.000100', status: 'approved' });
    await expect(approvals.setMessageRef('nope', 'x')).rejects.toThrow(/does not exist/);
    expect(await approvals.decide('nope', 'approved', alice)).toEqual({ applied: false, record: undefined });
  });
});

// Engine-free cases run with the SQLite ones (the unit project), once.
if (engineWanted('sqlite')) describe('approval arguments', () => {
  it('hashes arguments independently of key order', () => {
    expect(canonicalJson({ b: { y: 1, x: [2, { d: 1, c: 2 }] }, a: 'z' })).toBe('{"a":"z","b":{"x":[2,{"c":2,"d":1}],"y":1}}');
    expect(hashArgs({ a: 1, b: 2 })).toBe(hashArgs({ b: 2, a: 1 }));
    expect(hashArgs({ a: 1 })).not.toBe(hashArgs({ a: '1' }));
    expect(hashArgs(undefined)).toBe(hashArgs(null));
  });
});
