import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import type { Reminder } from '../../src/state/reminders/reminder-record.js';
import { createReminderStore } from '../../src/state/reminders/reminder-store.js';
import { createReminderSource } from '../../src/state/reminders/reminder-delivery.js';
import { createDueTimer } from '../../src/state/timers/due-timer.js';
import type { Store } from '../../src/state/store/store.js';
import { alice, channel, memoryLogger, tempStoreFile } from './fixtures.js';
import { settle } from './manual-clock.js';

describe('reminder scheduler (real clock, short delays)', () => {
  let tmp: Awaited<ReturnType<typeof tempStoreFile>>;
  let store: Store;

  beforeEach(async () => {
    tmp = await tempStoreFile();
    store = await tmp.open();
  });
  afterEach(async () => {
    await store.close();
    await tmp.cleanup();
  });

  it('fires each reminder once, not before its time, via the timer rather than the poll', async () => {
    const reminders = createReminderStore(store, systemClock);
    const delivered: Array<{ id: string; at: number }> = [];
    const log = memoryLogger().log;
    const source = createReminderSource({
      reminders,
      clock: systemClock,
      log,
      deliver: async (r: Reminder) => {
        delivered.push({ id: r.id, at: Date.now() });
      },
    });
    // The poll is far longer than the test: only the armed timer can fire these.
    const scheduler = createDueTimer({ clock: systemClock, log, pollMs: 60_000, sources: [source] });
    await scheduler.start();
    try {
      const mine = reminders.forUser(alice, channel);
      const start = Date.now();
      const later = await mine.create('later', start + 1_500);
      scheduler.poke();
      const soon = await mine.create('soon', start + 800);
      scheduler.poke();

      await settle(() => delivered.length >= 2, 15_000);
      await new Promise((r) => setTimeout(r, 300));
      expect(delivered.map((d) => d.id)).toEqual([soon.id, later.id]);
      expect(delivered[0]!.at).toBeGreaterThanOrEqual(start + 800);
      expect(delivered[1]!.at).toBeGreaterThanOrEqual(start + 1_500);
      expect(delivered[1]!.at).toBeLessThan(start + 10_000); // long before the 60 s poll
      await settle(async () => (await reminders.get(later.id))?.status === 'fired');
    } finally {
      scheduler.stop();
    }
  });
});
