import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/basics/clock.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { storeKey, type Store } from '../../src/state/store/store.js';
import { canonicalJson, createApprovalStore, hashArgs, type NewApproval } from '../../src/state/approvals/approval-store.js';

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

let dir: string;
const open: Store[] = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-approvals-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close().catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

describe('approval store', () => {
  it('stores a pending record that survives a reopen and is decided exactly once after it', async () => {
    const file = path.join(dir, 'hermes.sqlite');
    const clock = manualClock();
    const first = await createSqliteStore({ file });
    const created = await createApprovalStore(first, clock).create(input(clock));
    expect(created.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(created.status).toBe('pending');
    expect(created.createdAt).toBe(clock.now());
    expect(created.argsHash).toBe(hashArgs(created.args));
    expect(created.argsHash).toMatch(/^[0-9a-f]{64}$/);
    await first.close();

    const second = await createSqliteStore({ file });
    open.push(second);
    const approvals = createApprovalStore(second, clock);
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

  it('applies exactly one of 50 concurrent decisions', async () => {
    const clock = manualClock();
    const store = await createSqliteStore({ file: path.join(dir, 'hermes.sqlite') });
    open.push(store);
    const approvals = createApprovalStore(store, clock);
    const { id } = await approvals.create(input(clock));
    const deciders = Array.from({ length: 50 }, (_, i): Speaker => ({ ...bob, userId: `U${i}` }));
    const results = await Promise.all(
      deciders.map((by, i) => approvals.decide(id, i % 2 ? 'denied' : 'approved', by)),
    );
    const winners = results.filter((r) => r.applied);
    expect(winners).toHaveLength(1);
    const final = await approvals.get(id);
    expect(final?.status).toBe(winners[0]!.record!.status);
    expect(final?.decidedBy).toEqual(winners[0]!.record!.decidedBy);
  });

  it('lets the gateway see an expiry that has passed, and expire it once', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore(createMemoryStore(clock), clock);
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
    const approvals = createApprovalStore(createMemoryStore(clock), clock);
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
    const approvals = createApprovalStore(createMemoryStore(clock), clock);
    const { id } = await approvals.create(input(clock));
    await approvals.decide(id, 'approved', alice);
    await approvals.markRunning(id);
    await approvals.markUnknown(id);
    expect((await approvals.get(id))?.status).toBe('unknown');
    expect(await approvals.markRunning(id)).toBe(false);
    expect(await approvals.listOpen()).toEqual([]);
  });

  it('keeps the open index right through every kind of decision', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore(createMemoryStore(clock), clock);
    const make = async (sessionId: string) => {
      clock.advance(1);
      return (await approvals.create(input(clock, { sessionId }))).id;
    };
    const [denied, expired, cancelled, approved, running, done, pending, other] = await Promise.all(
      ['s1', 's1', 's1', 's1', 's1', 's1', 's1', 's2'].map(make),
    );
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
    expect(new Set(listed.map((r) => r.id))).toEqual(new Set([approved, running, pending, other]));
    expect(listed.map((r) => r.createdAt)).toEqual([...listed.map((r) => r.createdAt)].sort((a, b) => a - b));
    expect(new Set((await approvals.openForSession('s1')).map((r) => r.id))).toEqual(new Set([approved, running, pending]));
    expect((await approvals.openForSession('s2')).map((r) => r.id)).toEqual([other]);
  });

  it('prunes index entries whose record is missing or closed', async () => {
    const clock = manualClock();
    const store = createMemoryStore(clock);
    const approvals = createApprovalStore(store, clock);
    const { id } = await approvals.create(input(clock));
    await store.update<string[]>(storeKey('approval', 'open'), (ids) => [...(ids ?? []), 'ghost']);
    expect((await approvals.listOpen()).map((r) => r.id)).toEqual([id]);
    expect(await store.get(storeKey('approval', 'open'))).toEqual([id]);
  });

  it('refuses a record whose stored arguments no longer match their hash', async () => {
    const clock = manualClock();
    const store = createMemoryStore(clock);
    const approvals = createApprovalStore(store, clock);
    const created = await approvals.create(input(clock));
    const key = storeKey('approval', 'record', created.id);
    await store.update<Record<string, unknown>>(key, (r) => ({ ...r, args: { url: 'https://evil.example/', body: {} } }));

    const read = await approvals.get(created.id);
    expect(read?.tampered).toBe(true);
    const decision = await approvals.decide(created.id, 'approved', alice);
    expect(decision.applied).toBe(false);
    expect((await approvals.get(created.id))?.status).toBe('pending');
    expect(await approvals.markRunning(created.id)).toBe(false);
    expect((await approvals.listOpen())[0]?.tampered).toBe(true);
  });

  it('stores the prompt message reference, and refuses one for an unknown id', async () => {
    const clock = manualClock();
    const approvals = createApprovalStore(createMemoryStore(clock), clock);
    const { id } = await approvals.create(input(clock));
    await approvals.setMessageRef(id, 'C1:1700000000.000100');
    expect((await approvals.get(id))?.messageRef).toBe('C1:1700000000.000100');
    await expect(approvals.setMessageRef('nope', 'x')).rejects.toThrow(/does not exist/);
    expect(await approvals.decide('nope', 'approved', alice)).toEqual({ applied: false, record: undefined });
  });

  it('hashes arguments independently of key order', () => {
    expect(canonicalJson({ b: { y: 1, x: [2, { d: 1, c: 2 }] }, a: 'z' })).toBe('{"a":"z","b":{"x":[2,{"c":2,"d":1}],"y":1}}');
    expect(hashArgs({ a: 1, b: 2 })).toBe(hashArgs({ b: 2, a: 1 }));
    expect(hashArgs({ a: 1 })).not.toBe(hashArgs({ a: '1' }));
    expect(hashArgs(undefined)).toBe(hashArgs(null));
  });
});
