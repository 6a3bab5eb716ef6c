import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReminderStore, type ReminderStore } from '../../src/state/reminders/reminder-store.js';
import type { ToolContext, ToolResult, UserFacts } from '../../src/capabilities/toolkit/tool-api.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { cancelReminderTool, createReminderTool, listRemindersTool, reminderTools } from '../../tools/reminders.js';
import { alice, bob, channel, memoryLogger } from './fixtures.js';
import { ManualClock } from './manual-clock.js';
import { timerDir, type TimerRig } from './timer-rig.js';

const T0 = Date.UTC(2026, 10, 29, 12, 0); // 13:00 in Berlin (CET)

const unusedFacts: UserFacts = {
  remember: () => Promise.reject(new Error('facts are not used by reminder tools')),
  recall: () => Promise.reject(new Error('facts are not used by reminder tools')),
  forget: () => Promise.reject(new Error('facts are not used by reminder tools')),
};

const text = (r: ToolResult) => (typeof r === 'string' ? r : r.summary);

describe('reminder tools', () => {
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

  function ctx(speaker: Speaker, conversation: Conversation = channel, timezone = 'Europe/Berlin'): ToolContext {
    return {
      signal: new AbortController().signal,
      clock,
      speaker,
      isAdmin: false,
      conversation,
      facts: unusedFacts,
      reminders: reminders.forUser(speaker, conversation),
      net: { request: () => Promise.reject(new Error('no network in reminder tools')), check: () => Promise.reject(new Error('no network in reminder tools')) },
      settings: {},
      defaults: { timezone },
      log: memoryLogger().log,
    };
  }

  const create = (speaker: Speaker, args: { text: string; at: string }, tz?: string) =>
    createReminderTool.run(createReminderTool.input.parse(args), ctx(speaker, channel, tz));

  it('exports the three tools under their stable names, in the reminders category', () => {
    expect(reminderTools.map((t) => t.name)).toEqual(['create_reminder', 'list_reminders', 'cancel_reminder']);
    expect(reminderTools.every((t) => t.category === 'reminders' && !t.needsApproval)).toBe(true);
  });

  it('creates a reminder from an ISO time with offset and reports id and time', async () => {
    const out = text(await create(alice, { text: 'water the plants', at: '2026-11-29T14:30:00+01:00' }));
    const id = /Reminder (\w+) set/.exec(out)?.[1];
    expect(out).toContain('set for 2026-11-29T14:30:00+01:00');
    const stored = await reminders.get(id!);
    expect(stored).toMatchObject({ text: 'water the plants', dueAt: T0 + 90 * 60_000, conversation: channel, status: 'scheduled' });
  });

  it('reads a time without offset in the deployment time zone and says so', async () => {
    const out = text(await create(alice, { text: 'tea', at: '2026-11-29T15:00' }));
    expect(out).toContain('set for 2026-11-29T15:00:00+01:00');
    expect(out).toContain('read in Europe/Berlin');
    const [view] = await reminders.forUser(alice, channel).list();
    expect(view?.dueAt).toBe(Date.UTC(2026, 10, 29, 14, 0));
  });

  it('refuses a time in the past, naming the current time', async () => {
    await expect(create(alice, { text: 'too late', at: '2026-11-29T11:59:00Z' })).rejects.toThrow(
      /is in the past\. The current time is 2026-11-29T12:00:00Z \(2026-11-29T13:00:00\+01:00 in Europe\/Berlin\)/,
    );
    expect(await reminders.forUser(alice, channel).list()).toEqual([]);
  });

  it('refuses an unparseable time, saying what was wrong and the current time', async () => {
    await expect(create(alice, { text: 'x', at: 'tomorrow 3pm' })).rejects.toThrow(/not an ISO 8601 date-time.*current time is 2026-11-29T12:00:00Z/);
    await expect(create(alice, { text: 'x', at: '2026-11-31T10:00Z' })).rejects.toThrow(/not a real calendar date/);
    await expect(create(alice, { text: 'x', at: '2026-12-01' })).rejects.toThrow(/no time of day/);
  });

  it('passes limit errors through as text for the model', async () => {
    await expect(create(alice, { text: 'x'.repeat(1001), at: '2026-11-29T14:00Z' })).rejects.toThrow(/limit is 1000/);
    await expect(create(alice, { text: 'far', at: '2028-01-01T00:00Z' })).rejects.toThrow(/one year ahead/);
  });

  it('lists and cancels only the speaking user\'s reminders', async () => {
    await create(alice, { text: 'alice one', at: '2026-11-29T14:00:00Z' });
    const bobOut = text(await create(bob, { text: 'bob secret', at: '2026-11-29T15:00:00Z' }));
    const bobId = /Reminder (\w+) set/.exec(bobOut)![1]!;

    const aliceList = text(await listRemindersTool.run({}, ctx(alice)));
    expect(aliceList).toContain('1 upcoming reminder:');
    expect(aliceList).toContain('alice one');
    expect(aliceList).not.toContain('bob secret');

    await expect(cancelReminderTool.run({ id: bobId }, ctx(alice))).rejects.toThrow(/No upcoming reminder with id/);
    expect((await reminders.get(bobId))?.status).toBe('scheduled');
    expect(text(await cancelReminderTool.run({ id: bobId }, ctx(bob)))).toContain(`Reminder ${bobId} cancelled`);
    expect(text(await listRemindersTool.run({}, ctx(bob)))).toContain('no upcoming reminders');
  });
});
