/**
 * Reads the `at` argument of create_reminder. Models write times in many ways; we accept ISO 8601
 * date-times only, because a reminder at the wrong moment is worse than a clear error the model can
 * fix. A time with `Z` or an offset is exact; a time without one is wall-clock time in the
 * deployment's zone (models often drop the offset when the user said "at 3pm").
 *
 * Pure: the caller passes the zone; no clock involved.
 */

export type ParsedTime = { ok: true; epochMs: number; hadOffset: boolean } | { ok: false; problem: string };

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

export function parseDueTime(input: string, timezone: string): ParsedTime {
  const text = input.trim();
  const m = ISO.exec(text);
  if (!m) {
    const hint = /^\d{4}-\d{2}-\d{2}$/.test(text) ? ' It has a date but no time of day.' : '';
    return {
      ok: false,
      problem: `"${input}" is not an ISO 8601 date-time.${hint} Use a form like 2026-03-14T15:30:00+01:00, 2026-03-14T14:30:00Z, or 2026-03-14T15:30 (read in ${timezone}).`,
    };
  }
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);

  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    return { ok: false, problem: `"${input}" is not a real calendar date.` };
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return { ok: false, problem: `"${input}" has an impossible time of day (hours 00-23, minutes and seconds 00-59).` };
  }

  const wall = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const offsetText = m[8];
  if (offsetText !== undefined) {
    const offsetMin = parseOffsetMinutes(offsetText);
    if (offsetMin === undefined) return { ok: false, problem: `"${input}" has an invalid UTC offset "${offsetText}".` };
    return { ok: true, epochMs: wall - offsetMin * 60_000, hadOffset: true };
  }
  const epochMs = wallTimeToEpoch(wall, timezone);
  if (epochMs === undefined) return { ok: false, problem: `the time zone "${timezone}" is not known; give the time with an offset or Z.` };
  return { ok: true, epochMs, hadOffset: false };
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function parseOffsetMinutes(text: string): number | undefined {
  if (text === 'Z' || text === 'z') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const digits = text.slice(1).replace(':', '');
  const h = Number(digits.slice(0, 2));
  const min = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (h > 23 || min > 59) return undefined;
  return sign * (h * 60 + min);
}

/** Minutes the zone is ahead of UTC at the given instant, or undefined for an unknown zone. */
export function zoneOffsetMinutes(epochMs: number, timezone: string): number | undefined {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone, hourCycle: 'h23',
      year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    }).formatToParts(new Date(epochMs));
  } catch {
    return undefined;
  }
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return Math.round((asUtc - Math.floor(epochMs / 1000) * 1000) / 60_000);
}

/**
 * Wall-clock time in a zone → instant. Offsets change at most once within a day, so the offsets a
 * day before and after are the only candidates. An ambiguous time (clocks go back) resolves to the
 * first occurrence; a skipped time (clocks go forward) keeps the earlier offset, i.e. it moves
 * forward by the gap, as a person would expect ("02:30" on that night means 03:30).
 */
export function wallTimeToEpoch(wall: number, timezone: string): number | undefined {
  const before = zoneOffsetMinutes(wall - 86_400_000, timezone);
  const after = zoneOffsetMinutes(wall + 86_400_000, timezone);
  if (before === undefined || after === undefined) return undefined;
  const valid = [before, after]
    .map((offset) => wall - offset * 60_000)
    .filter((t) => zoneOffsetMinutes(t, timezone) === (wall - t) / 60_000);
  return valid.length > 0 ? Math.min(...valid) : wall - before * 60_000;
}

/** An instant as ISO 8601 with the zone's offset, e.g. 2026-03-14T15:30:00+01:00. */
export function formatInZone(epochMs: number, timezone: string): string {
  const offset = zoneOffsetMinutes(epochMs, timezone) ?? 0;
  const local = new Date(epochMs + offset * 60_000).toISOString().slice(0, 19);
  if (offset === 0) return `${local}Z`;
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
