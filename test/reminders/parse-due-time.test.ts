import { describe, expect, it } from 'vitest';
import { formatInZone, parseDueTime } from '../../src/state/reminders/parse-due-time.js';

const at = (s: string, tz = 'UTC') => {
  const r = parseDueTime(s, tz);
  if (!r.ok) throw new Error(r.problem);
  return new Date(r.epochMs).toISOString();
};

describe('parseDueTime', () => {
  it('reads Z and explicit offsets exactly', () => {
    expect(at('2026-03-14T14:30:00Z', 'Asia/Tokyo')).toBe('2026-03-14T14:30:00.000Z');
    expect(at('2026-03-14T15:30:00+01:00')).toBe('2026-03-14T14:30:00.000Z');
    expect(at('2026-03-14T09:30-0500')).toBe('2026-03-14T14:30:00.000Z');
    expect(at('2026-03-14 14:30:05.250+00')).toBe('2026-03-14T14:30:05.250Z');
  });

  it('reads a time without offset in the given zone, winter and summer', () => {
    expect(at('2026-01-10T15:00', 'Europe/Berlin')).toBe('2026-01-10T14:00:00.000Z');
    expect(at('2026-07-10T15:00:00', 'Europe/Berlin')).toBe('2026-07-10T13:00:00.000Z');
    expect(at('2026-07-10T15:00:00', 'Asia/Shanghai')).toBe('2026-07-10T07:00:00.000Z');
    const r = parseDueTime('2026-07-10T15:00', 'Europe/Berlin');
    expect(r.ok && r.hadOffset).toBe(false);
  });

  it('resolves DST edges: a skipped time moves forward, an ambiguous one takes the first occurrence', () => {
    // Berlin 2026-03-29: 02:00 → 03:00. "02:30" does not exist; read as 03:30 CEST.
    expect(at('2026-03-29T02:30', 'Europe/Berlin')).toBe('2026-03-29T01:30:00.000Z');
    // Berlin 2026-10-25: 03:00 → 02:00. "02:30" happens twice; first is CEST (+02:00).
    expect(at('2026-10-25T02:30', 'Europe/Berlin')).toBe('2026-10-25T00:30:00.000Z');
  });

  it('rejects what is not an unambiguous date-time, saying what is wrong', () => {
    const problem = (s: string, tz = 'UTC') => {
      const r = parseDueTime(s, tz);
      return r.ok ? 'parsed' : r.problem;
    };
    expect(problem('tomorrow at 3pm')).toContain('not an ISO 8601 date-time');
    expect(problem('2026-03-14')).toContain('no time of day');
    expect(problem('2026-02-30T10:00Z')).toContain('not a real calendar date');
    expect(problem('2026-03-14T25:00Z')).toContain('impossible time of day');
    expect(problem('2026-03-14T10:00+25:00')).toContain('invalid UTC offset');
    expect(problem('2026-03-14T10:00', 'Mars/Olympus')).toContain('not known');
  });

  it('formats an instant with the zone offset', () => {
    expect(formatInZone(Date.UTC(2026, 6, 10, 13, 0), 'Europe/Berlin')).toBe('2026-07-10T15:00:00+02:00');
    expect(formatInZone(Date.UTC(2026, 6, 10, 13, 0), 'America/St_Johns')).toBe('2026-07-10T10:30:00-02:30');
    expect(formatInZone(Date.UTC(2026, 6, 10, 13, 0), 'UTC')).toBe('2026-07-10T13:00:00Z');
  });
});
