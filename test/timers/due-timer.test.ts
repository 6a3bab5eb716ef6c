import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScheduleSource } from '../../src/state/schedules/schedule-runs.js';
import { createScheduleStore } from '../../src/state/schedules/schedule-store.js';
import { createDueTimer, type DueSource } from '../../src/state/timers/due-timer.js';
import type { Store } from '../../src/state/store/store.js';
import { alice, channel, memoryLogger, tempStoreFile } from '../reminders/fixtures.js';
import { advanceUntil, ManualClock, settle } from '../reminders/manual-clock.js';

const T0 = Date.UTC(2026, 10, 30, 12, 0);
const MIN = 60_000;
const hm = (t: number) => new Date(t).toISOString().slice(11, 16);

describe('the due timer (scheduled tasks; reminders are rows of the WorkQueue)', () => {
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

  it('arms for the earliest item and fires it once, in time', async () => {
    const clock = new ManualClock(T0);
    const log = memoryLogger().log;
    const fired: string[] = [];
    const schedules = createScheduleStore(store, clock, { minIntervalS: 300, maxPerUser: 5, defaultTimezone: 'UTC' });
    const timer = createDueTimer({
      clock, log, pollMs: 60 * MIN, // far apart: only the armed timer can fire these in time
      sources: [
        createScheduleSource({
          schedules, clock, log, graceMs: MIN, startedAt: T0,
          run: async (run) => {
            fired.push(`schedule ${run.scheduleId === s.id ? 'daily' : '?'} due ${hm(Number(run.runId.split('@')[1]))} fired ${hm(clock.now())}`);
            return 'answered';
          },
          notify: async () => undefined,
          waitingForApproval: async () => false,
        }),
      ],
    });
    const s = await schedules.forUser(alice, channel).create({ task: 'digest', schedule: '30 12 * * *' });
    await timer.start();
    await advanceUntil(clock, () => fired.length >= 1, { stepMs: MIN, maxSteps: 120, pauseMs: 10 });
    // Fired by the armed timer, in due order, each within a few manual minutes of its time (the
    // hourly poll alone would have waited until 13:00); the manual clock runs on during I/O.
    expect(fired.map((f) => f.replace(/ fired .*/, ''))).toEqual(['schedule daily due 12:30']);
    for (const f of fired) {
      const [due, at] = [/due (\d\d:\d\d)/.exec(f)![1]!, /fired (\d\d:\d\d)/.exec(f)![1]!];
      expect(at >= due && at < '12:50').toBe(true);
    }
    timer.stop();
    await timer.idle(1_000);
  });

  it('idle() waits for jobs in flight after stop, so their bookkeeping never meets a closed store', async () => {
    const clock = new ManualClock(T0);
    let release = () => {};
    let finished = false;
    const source: DueSource = {
      kind: 'test',
      nextDueAt: async () => undefined,
      claim: async (_now, _limit, busy) => (busy('job') || finished ? { jobs: [], more: false } : {
        jobs: [{ key: 'job', run: async () => { await new Promise<void>((r) => (release = r)); finished = true; } }],
        more: false,
      }),
    };
    const timer = createDueTimer({ clock, log: memoryLogger().log, sources: [source] });
    await timer.start();
    timer.stop();
    let idle = false;
    const waiting = timer.idle(10_000).then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 30));
    expect(idle).toBe(false);
    release();
    await waiting;
    await settle(() => idle);
    expect(finished).toBe(true);
  });
});
