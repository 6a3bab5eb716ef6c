import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReminderStore, PRIVATE_TEXT, type ReminderStore } from '../../src/state/reminders/reminder-store.js';
import { LIMITS, ReminderInputError } from '../../src/state/reminders/reminder-record.js';
import { alice, bob, channel, otherChannel } from './fixtures.js';
import { ManualClock } from './manual-clock.js';
import { timerDir, type TimerRig } from './timer-rig.js';

const T0 = Date.UTC(2026, 10, 29, 12, 0);
const MIN = 60_000;

describe('reminder store (the hermes_reminder table, SQLite)', () => {
  let tmp: Awaited<ReturnType<typeof timerDir>>;
  let rig: TimerRig;
  let clock: ManualClock;
  let reminders: ReminderStore;

  beforeEach(async () => {
    tmp = await timerDir();
    clock = new ManualClock(T0);
    rig = await tmp.open(clock);
    reminders = createReminderStore(rig.database, clock, rig.queue);
  });
  afterEach(async () => {
    await rig.close();
    await tmp.cleanup();
  });

  const workRows = () => rig.database.db.selectFrom('hermes_work').select(['id', 'kind', 'lane', 'due_at']).orderBy('due_at').execute();

  it('creates a reminder with a short readable id, posting back into the creating conversation', async () => {
    const view = await reminders.forUser(alice, channel, 'M1').create('  water the plants ', T0 + 10 * MIN);
    expect(view).toMatchObject({ text: 'water the plants', dueAt: T0 + 10 * MIN, createdAt: T0, status: 'scheduled' });
    expect(view.id).toMatch(/^[a-z2-9]{6}$/);
    const record = await reminders.get(view.id);
    expect(record).toMatchObject({ ownerKey: 'slack:T1:UALICE', conversation: channel, replyTo: 'M1', speaker: alice });
    expect(await reminders.nextDueAt()).toBe(T0 + 10 * MIN);
    // Its firing is one work row, due at its time, written with it.
    expect(await workRows()).toEqual([{ id: `reminder:${view.id}`, kind: 'reminder', lane: `reminder:${view.id}`, due_at: T0 + 10 * MIN }]);
  });

  it('lists and cancels only the speaker\'s own reminders', async () => {
    const a = reminders.forUser(alice, channel);
    const b = reminders.forUser(bob, otherChannel);
    const a1 = await a.create('alice later', T0 + 20 * MIN);
    const a2 = await a.create('alice sooner', T0 + 5 * MIN);
    const b1 = await b.create('bob thing', T0 + 7 * MIN);

    expect((await a.list()).map((v) => v.id)).toEqual([a2.id, a1.id]);
    expect((await b.list()).map((v) => v.text)).toEqual(['bob thing']);

    expect(await b.cancel(a1.id)).toBe(false);
    expect((await reminders.get(a1.id))?.status).toBe('scheduled');
    expect(await a.cancel(a1.id.toUpperCase())).toBe(true);
    expect(await a.cancel(a1.id)).toBe(false);
    expect((await a.list()).map((v) => v.id)).toEqual([a2.id]);
    // A cancelled reminder is no longer due, and its work row went with the cancel.
    expect((await reminders.due(T0 + 60 * MIN)).map((r) => r.id).sort()).toEqual([a2.id, b1.id].sort());
    expect((await workRows()).map((w) => w.id).sort()).toEqual([`reminder:${a2.id}`, `reminder:${b1.id}`].sort());
  });

  it('does not read out the text of a reminder set in a DM when listing elsewhere', async () => {
    const dm = { platform: 'slack' as const, workspaceId: 'T1', channelId: 'D1', isDm: true };
    const v = await reminders.forUser(alice, dm).create('take my medication', T0 + MIN);
    expect((await reminders.forUser(alice, dm).list())[0]?.text).toBe('take my medication');
    const inChannel = await reminders.forUser(alice, channel).list();
    expect(inChannel).toEqual([expect.objectContaining({ id: v.id, text: PRIVATE_TEXT })]);
    // Still the owner's to cancel from anywhere.
    expect(await reminders.forUser(alice, channel).cancel(v.id)).toBe(true);
  });

  it('keeps users apart across workspaces and platforms even with the same user id', async () => {
    const sameIdElsewhere = { ...alice, workspaceId: 'T2' };
    await reminders.forUser(alice, channel).create('mine', T0 + MIN);
    expect(await reminders.forUser(sameIdElsewhere, channel).list()).toEqual([]);
  });

  it('enforces text, time and per-user limits with messages for the model', async () => {
    const a = reminders.forUser(alice, channel);
    await expect(a.create('   ', T0 + MIN)).rejects.toThrow(/empty/);
    await expect(a.create('x'.repeat(LIMITS.maxTextChars + 1), T0 + MIN)).rejects.toThrow(/limit is 1000/);
    await expect(a.create('x'.repeat(LIMITS.maxTextChars), T0 + MIN)).resolves.toMatchObject({ status: 'scheduled' });
    await expect(a.create('past', T0 - 1)).rejects.toThrow(/current time is 2026-11-29T12:00:00.000Z/);
    await expect(a.create('now', T0)).rejects.toBeInstanceOf(ReminderInputError);
    await expect(a.create('far', T0 + LIMITS.maxAheadMs + 1)).rejects.toThrow(/one year ahead/);

    for (let i = 1; i < LIMITS.maxScheduledPerUser; i++) await a.create(`r${i}`, T0 + i * MIN);
    await expect(a.create('one too many', T0 + 2 * MIN)).rejects.toThrow(/100 scheduled reminders/);
    expect(await a.list()).toHaveLength(100);
    // Bob is not affected by Alice's limit; cancelling frees a slot.
    await expect(reminders.forUser(bob, channel).create('bob', T0 + MIN)).resolves.toBeDefined();
    const first = (await a.list())[0]!;
    expect(await a.cancel(first.id)).toBe(true);
    await expect(a.create('fits again', T0 + 3 * MIN)).resolves.toMatchObject({ text: 'fits again' });
  });

  it('lets exactly one of many concurrent claims win, and a claimed reminder cannot be cancelled', async () => {
    const a = reminders.forUser(alice, channel);
    const v = await a.create('once', T0 + MIN);
    const other = createReminderStore(rig.database, clock, rig.queue);
    const wins = await Promise.all([...Array(10)].map((_, i) => (i % 2 ? reminders : other).claim(v.id)));
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await reminders.counts()).toEqual({ scheduled: 0, firing: 1 });
    expect(await a.cancel(v.id)).toBe(false);
    expect(await reminders.due(T0 + 2 * MIN)).toEqual([]);
    // Still listed until it has fired (the claim may be a delivery in progress).
    expect((await a.list()).map((x) => x.id)).toEqual([v.id]);
    await reminders.markFired(v.id, false);
    expect(await reminders.get(v.id)).toMatchObject({ status: 'fired', firedAt: T0, late: false });
    expect(await a.list()).toEqual([]);
    expect(await reminders.claim(v.id)).toBeUndefined();
  });

  it('only returns reminders that are due, earliest first, bounded by the limit', async () => {
    const a = reminders.forUser(alice, channel);
    const late = await a.create('late', T0 + 30 * MIN);
    const early = await a.create('early', T0 + 10 * MIN);
    const mid = await a.create('mid', T0 + 20 * MIN);
    expect(await reminders.due(T0 + 5 * MIN)).toEqual([]);
    expect((await reminders.due(T0 + 25 * MIN)).map((r) => r.id)).toEqual([early.id, mid.id]);
    expect((await reminders.due(T0 + 60 * MIN, 1)).map((r) => r.id)).toEqual([early.id]);
    expect(late.id).toBeDefined();
  });

  it('a claim left "firing" (its runner died) is taken over once, marked as a possible repeat', async () => {
    const v = await reminders.forUser(alice, channel).create('orphan', T0 + MIN);
    clock.advance(MIN);
    expect(await reminders.claim(v.id)).toMatchObject({ status: 'firing', claimedAt: T0 + MIN });
    clock.advance(MIN);
    const [first, second] = await Promise.all([reminders.takeOver(v.id), reminders.takeOver(v.id)]);
    // Both may apply on one connection (firing → firing); each hands back the repeat marker.
    expect([first, second].filter(Boolean).length).toBeGreaterThanOrEqual(1);
    expect(first ?? second).toMatchObject({ maybeRepeat: true, claimedAt: T0 + 2 * MIN, status: 'firing' });
    await reminders.markFired(v.id, true);
    expect(await reminders.takeOver(v.id)).toBeUndefined();
  });

  it('per-user limit holds under concurrent creation, and ended reminders are pruned by age', async () => {
    const a = reminders.forUser(alice, channel);
    for (let i = 0; i < LIMITS.maxScheduledPerUser - 5; i++) await a.create(`r${i}`, T0 + (i + 1) * MIN);
    const results = await Promise.allSettled([...Array(20)].map((_, i) => a.create(`race ${i}`, T0 + 2 * MIN)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    expect(await reminders.counts()).toEqual({ scheduled: LIMITS.maxScheduledPerUser, firing: 0 });
    const [first] = await a.list();
    expect(await a.cancel(first!.id)).toBe(true);
    expect(await reminders.prune(first!.dueAt)).toBe(0);
    expect(await reminders.prune(first!.dueAt + 1)).toBe(1);
    expect(await reminders.get(first!.id)).toBeUndefined();
  });
});
