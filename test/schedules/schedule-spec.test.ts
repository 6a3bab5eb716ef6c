import { describe, expect, it } from 'vitest';
import { describeSpec, formatRunTime, nextRunTimes, parseSchedule, type ScheduleSpec } from '../../src/state/schedules/schedule-spec.js';
import { describeCron } from '../../src/state/schedules/schedule-words.js';

// Friday 27 March 2026, 12:00 UTC: Europe/Berlin switches to summer time on Sunday the 29th.
const NOW = Date.UTC(2026, 2, 27, 12);
const BERLIN = 'Europe/Berlin';

function spec(text: string, minIntervalS = 300, tz = BERLIN): ScheduleSpec {
  const r = parseSchedule(text, tz, { now: NOW, minIntervalS });
  if (!r.ok) throw new Error(r.problem);
  return r.spec;
}

function problem(text: string, minIntervalS = 300): string {
  const r = parseSchedule(text, BERLIN, { now: NOW, minIntervalS });
  if (r.ok) throw new Error(`"${text}" was accepted`);
  return r.problem;
}

const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString());

describe('schedule specs', () => {
  it('reads 5-field cron in the zone, DST-correct (croner), and words it', () => {
    const s = spec('0 9 * * 1-5');
    // 09:00 Berlin is 08:00Z before the switch and 07:00Z after it.
    expect(iso(nextRunTimes(s, BERLIN, NOW, 3))).toEqual(['2026-03-30T07:00:00.000Z', '2026-03-31T07:00:00.000Z', '2026-04-01T07:00:00.000Z']);
    expect(describeSpec(s, BERLIN, describeCron)).toBe('At 09:00, Monday through Friday (Europe/Berlin)');
    expect(formatRunTime(Date.UTC(2026, 2, 30, 7), BERLIN, false)).toBe('Mon 2026-03-30 09:00 (Europe/Berlin, UTC+02:00)');
  });

  it('every <n> days keeps the wall-clock time across the DST switch; hours are exact', () => {
    const days = spec('every 1 days');
    expect(iso(nextRunTimes(days, BERLIN, NOW, 3))).toEqual(['2026-03-28T12:00:00.000Z', '2026-03-29T11:00:00.000Z', '2026-03-30T11:00:00.000Z']);
    expect(describeSpec(days, BERLIN, describeCron)).toBe('every day at 13:00 (Europe/Berlin)');
    const hours = spec('every 2 hours');
    expect(iso(nextRunTimes(hours, BERLIN, NOW, 2))).toEqual(['2026-03-27T14:00:00.000Z', '2026-03-27T16:00:00.000Z']);
    expect(describeSpec(hours, BERLIN, describeCron)).toBe('every 2 hours');
  });

  it('an ISO 8601 time runs once; without an offset it is read in the zone', () => {
    const once = spec('2026-04-01T09:00');
    expect(iso(nextRunTimes(once, BERLIN, NOW, 3))).toEqual(['2026-04-01T07:00:00.000Z']);
    expect(nextRunTimes(once, BERLIN, Date.UTC(2026, 3, 1, 7), 3)).toEqual([]);
    expect(problem('2026-03-01T09:00')).toContain('is in the past');
  });

  it('refuses schedules more frequent than the minimum interval, naming it', () => {
    expect(problem('*/1 * * * *')).toContain('every 1 minute at its most frequent; the shortest interval allowed here is 5 minutes');
    expect(problem('0,2 9 * * *')).toContain('every 2 minutes at its most frequent');
    expect(problem('every 4 minutes')).toContain('shortest interval allowed here is 5 minutes');
    expect(spec('*/5 * * * *')).toMatchObject({ kind: 'cron' });
  });

  it('seconds forms only when the minimum is below 60 s', () => {
    expect(problem('every 30 seconds')).toContain('schedules in seconds are not allowed here');
    expect(problem('*/30 * * * * *')).toContain('has 6 fields; only 5-field cron');
    const secs = spec('every 2 seconds', 1);
    expect(nextRunTimes(secs, BERLIN, NOW, 2).map((t) => t - NOW)).toEqual([2_000, 4_000]);
    const six = spec('*/2 * * * * *', 1);
    expect(nextRunTimes(six, BERLIN, NOW, 2).map((t) => t - NOW)).toEqual([2_000, 4_000]);
    expect(problem('every 1 seconds', 2)).toContain('every 1 second at its most frequent');
  });

  it('bad input comes back as one clear problem', () => {
    expect(problem('every weekday at 9')).toContain('is not a schedule I can read. Use a 5-field cron expression');
    expect(problem('0 61 * * *')).toContain('is not a valid cron expression (Invalid value for hour: 61)');
    expect(problem('0 0 30 2 *')).toContain('never runs');
    expect(problem('   ')).toContain('The schedule is empty');
  });
});
