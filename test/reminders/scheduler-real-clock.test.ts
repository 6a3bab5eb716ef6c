import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import type { Reminder } from '../../src/state/reminders/reminder-record.js';
import { createReminderStore } from '../../src/state/reminders/reminder-store.js';
import { createReminderRunner } from '../../src/state/reminders/reminder-delivery.js';
import { alice, channel, memoryLogger } from './fixtures.js';
import { settle } from './manual-clock.js';
import { timerDir, type TimerRig } from './timer-rig.js';

describe('reminder scheduler (real clock, short delays)', () => {
  let tmp: Awaited<ReturnType<typeof timerDir>>;
  let rig: TimerRig;

  beforeEach(async () => {
    tmp = await timerDir();
    rig = await tmp.open(systemClock);
  });
  afterEach(async () => {
    await rig.close();
    await tmp.cleanup();
  });

  it('fires each reminder once, not before its time, woken by its due time (no poll on SQLite)', async () => {
    const reminders = createReminderStore(rig.database, systemClock, rig.queue);
    const delivered: Array<{ id: string; at: number }> = [];
    const log = memoryLogger().log;
    const run = createReminderRunner({
      reminders,
      clock: systemClock,
      log,
      deliver: async (r: Reminder) => {
        delivered.push({ id: r.id, at: Date.now() });
      },
    });
    // The local queue never polls: only the wake-up for the earliest due row can fire these.
    await rig.start(async (job, ctx) => (job.kind === 'reminder' ? run(job, ctx) : undefined));
    {
      const mine = reminders.forUser(alice, channel);
      const start = Date.now();
      const later = await mine.create('later', start + 1_500);
      const soon = await mine.create('soon', start + 800);

      await settle(() => delivered.length >= 2, 15_000);
      await new Promise((r) => setTimeout(r, 300));
      expect(delivered.map((d) => d.id)).toEqual([soon.id, later.id]);
      expect(delivered[0]!.at).toBeGreaterThanOrEqual(start + 800);
      expect(delivered[1]!.at).toBeGreaterThanOrEqual(start + 1_500);
      expect(delivered[1]!.at).toBeLessThan(start + 10_000); // long before the 60 s poll
      await settle(async () => (await reminders.get(later.id))?.status === 'fired');
    }
  });
});
