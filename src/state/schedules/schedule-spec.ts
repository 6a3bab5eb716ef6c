import { Cron } from 'croner';
import { formatInZone, parseDueTime, wallTimeToEpoch, zoneOffsetMinutes } from '../reminders/parse-due-time.js';

/**
 * What a schedule means, read from the text the model gave: a cron expression (croner owns the
 * calendar, time zone and DST rules), `every <n> <unit>`, or one ISO 8601 time. Pure: the
 * caller passes the zone, the current time and the shortest allowed interval.
 *
 * `every <n> days` keeps the wall-clock time of the first run in the schedule's zone (09:13 stays
 * 09:13 across a DST change); seconds, minutes and hours are exact elapsed intervals.
 */
export type EveryUnit = 'seconds' | 'minutes' | 'hours' | 'days';

export type ScheduleSpec =
  | { kind: 'cron'; expression: string; withSeconds: boolean }
  | { kind: 'every'; n: number; unit: EveryUnit; /** The first run; later runs count from it. */ anchor: number }
  | { kind: 'once'; at: number };

export type SpecResult = { ok: true; spec: ScheduleSpec } | { ok: false; problem: string };

export interface SpecRules {
  now: number;
  /** HERMES_SCHEDULE_MIN_INTERVAL_S; below 60 also `every <n> seconds` and 6-field cron. */
  minIntervalS: number;
  /** A single run may be at most this far ahead. */
  maxAheadMs?: number;
}

const UNIT_MS: Record<EveryUnit, number> = { seconds: 1_000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 };
const EVERY = /^every\s+(?:(\d{1,6})\s+)?(second|minute|hour|day)s?$/i;
const ISO_START = /^\d{4}-\d{2}-\d{2}/;
/** How many upcoming cron runs are checked against the shortest interval. */
const INTERVAL_SAMPLE = 500;
const DEFAULT_MAX_AHEAD_MS = 366 * 86_400_000;

export function secondsAllowed(minIntervalS: number): boolean {
  return minIntervalS < 60;
}

function formsHelp(minIntervalS: number): string {
  const seconds = secondsAllowed(minIntervalS);
  return (
    `Use a 5-field cron expression${seconds ? ' (or 6 fields with seconds first)' : ''} such as "0 9 * * 1-5" (09:00 Monday to Friday), ` +
    `"every <n> ${seconds ? 'seconds|' : ''}minutes|hours|days", or an ISO 8601 date-time for a single run such as 2026-03-14T09:00.`
  );
}

export function intervalText(seconds: number): string {
  if (seconds % 86_400 === 0) return plural(seconds / 86_400, 'day');
  if (seconds % 3_600 === 0) return plural(seconds / 3_600, 'hour');
  if (seconds % 60 === 0) return plural(seconds / 60, 'minute');
  return plural(seconds, 'second');
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

function tooFrequent(what: string, gapMs: number, rules: SpecRules): string {
  return (
    `${what} would run every ${intervalText(Math.round(gapMs / 1000))} at its most frequent; the shortest interval allowed here is ` +
    `${intervalText(rules.minIntervalS)} (HERMES_SCHEDULE_MIN_INTERVAL_S). Choose a less frequent schedule.`
  );
}

export function isKnownZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

function cronOf(expression: string, withSeconds: boolean, timezone: string): Cron {
  return new Cron(expression, { timezone, paused: true, mode: withSeconds ? '6-part' : '5-part' });
}

export function parseSchedule(input: string, timezone: string, rules: SpecRules): SpecResult {
  const text = input.trim().replace(/\s+/g, ' ');
  if (text === '') return { ok: false, problem: `The schedule is empty. ${formsHelp(rules.minIntervalS)}` };

  const every = EVERY.exec(text);
  if (every) {
    const n = every[1] === undefined ? 1 : Number(every[1]);
    const unit = `${(every[2] as string).toLowerCase()}s` as EveryUnit;
    if (n < 1) return { ok: false, problem: `"${input}": the number must be at least 1.` };
    if (unit === 'seconds' && !secondsAllowed(rules.minIntervalS)) {
      return { ok: false, problem: `"${input}": schedules in seconds are not allowed here; the shortest interval is ${intervalText(rules.minIntervalS)}. ${formsHelp(rules.minIntervalS)}` };
    }
    const gapMs = n * UNIT_MS[unit];
    if (gapMs < rules.minIntervalS * 1000) return { ok: false, problem: tooFrequent(`"${input}"`, gapMs, rules) };
    // Whole seconds: run times read cleanly, and every instance computes the same ones.
    return { ok: true, spec: { kind: 'every', n, unit, anchor: Math.ceil((rules.now + gapMs) / 1000) * 1000 } };
  }

  if (ISO_START.test(text)) {
    const parsed = parseDueTime(text, timezone);
    if (!parsed.ok) return { ok: false, problem: parsed.problem };
    if (parsed.epochMs <= rules.now) {
      return { ok: false, problem: `"${input}" (${formatInZone(parsed.epochMs, timezone)}) is in the past; the current time is ${formatInZone(rules.now, timezone)}.` };
    }
    const maxAhead = rules.maxAheadMs ?? DEFAULT_MAX_AHEAD_MS;
    if (parsed.epochMs - rules.now > maxAhead) return { ok: false, problem: `"${input}" is more than a year ahead; schedule it closer to the time.` };
    return { ok: true, spec: { kind: 'once', at: parsed.epochMs } };
  }

  const fields = text.split(' ');
  if (fields.length !== 5 && fields.length !== 6) {
    return { ok: false, problem: `"${input}" is not a schedule I can read. ${formsHelp(rules.minIntervalS)}` };
  }
  const withSeconds = fields.length === 6;
  if (withSeconds && !secondsAllowed(rules.minIntervalS)) {
    return { ok: false, problem: `"${input}" has 6 fields; only 5-field cron expressions (minute hour day month weekday) are allowed here. ${formsHelp(rules.minIntervalS)}` };
  }
  let cron: Cron;
  try {
    cron = cronOf(text, withSeconds, timezone);
  } catch (error) {
    const why = (error instanceof Error ? error.message : String(error)).replace(/^CronPattern: /, '');
    return { ok: false, problem: `"${input}" is not a valid cron expression (${why}). ${formsHelp(rules.minIntervalS)}` };
  }
  const upcoming = cron.nextRuns(INTERVAL_SAMPLE, new Date(rules.now)).map((d) => d.getTime());
  if (upcoming.length === 0) return { ok: false, problem: `"${input}" never runs (no date matches it).` };
  let smallest = Infinity;
  for (let i = 1; i < upcoming.length; i++) smallest = Math.min(smallest, (upcoming[i] as number) - (upcoming[i - 1] as number));
  if (smallest < rules.minIntervalS * 1000) return { ok: false, problem: tooFrequent(`"${input}"`, smallest, rules) };
  return { ok: true, spec: { kind: 'cron', expression: text, withSeconds } };
}

/** The anchor moved by k steps; days keep the anchor's wall-clock time in the zone. */
function everyAt(spec: Extract<ScheduleSpec, { kind: 'every' }>, k: number, timezone: string): number {
  if (spec.unit !== 'days') return spec.anchor + k * spec.n * UNIT_MS[spec.unit];
  const offset = zoneOffsetMinutes(spec.anchor, timezone) ?? 0;
  const wall = spec.anchor + offset * 60_000 + k * spec.n * UNIT_MS.days;
  return wallTimeToEpoch(wall, timezone) ?? spec.anchor + k * spec.n * UNIT_MS.days;
}

/** Up to `n` due times strictly after `after`, earliest first. */
export function nextRunTimes(spec: ScheduleSpec, timezone: string, after: number, n: number): number[] {
  if (n <= 0) return [];
  switch (spec.kind) {
    case 'once':
      return spec.at > after ? [spec.at] : [];
    case 'cron':
      return cronOf(spec.expression, spec.withSeconds, timezone)
        .nextRuns(n, new Date(after))
        .map((d) => d.getTime());
    case 'every': {
      const step = spec.n * UNIT_MS[spec.unit];
      // Days may be an hour off either way around DST, so start a step early and filter.
      let k = Math.max(0, Math.floor((after - spec.anchor) / step) - 1);
      const out: number[] = [];
      for (let guard = 0; out.length < n && guard < n + 4; guard++, k++) {
        const t = everyAt(spec, k, timezone);
        if (t > after) out.push(t);
      }
      return out;
    }
  }
}

/** The schedule in words for people, e.g. "every 2 hours" or "cron 0 9 * * 1-5 (Europe/Berlin)". */
export function describeSpec(spec: ScheduleSpec, timezone: string, describeCron: (expression: string) => string): string {
  switch (spec.kind) {
    case 'once':
      return `once, at ${formatRunTime(spec.at, timezone, false)}`;
    case 'every':
      if (spec.unit === 'days') {
        const local = formatInZone(spec.anchor, timezone).slice(11, 16);
        return `${spec.n === 1 ? 'every day' : `every ${spec.n} days`} at ${local} (${timezone})`;
      }
      return `every ${plural(spec.n, spec.unit.slice(0, -1))}`;
    case 'cron':
      return `${describeCron(spec.expression)} (${timezone})`;
  }
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** "Mon 2026-03-30 09:00 (Europe/Berlin, UTC+02:00)": the zone's wall-clock time with its weekday. */
export function formatRunTime(epochMs: number, timezone: string, withSeconds: boolean): string {
  const iso = formatInZone(epochMs, timezone);
  const offset = iso.slice(19) === 'Z' ? '+00:00' : iso.slice(19);
  const date = iso.slice(0, 10);
  const weekday = WEEKDAYS[new Date(`${date}T00:00:00Z`).getUTCDay()];
  const time = iso.slice(11, withSeconds ? 19 : 16);
  return `${weekday} ${date} ${time} (${timezone}, UTC${offset})`;
}

export function hasSeconds(spec: ScheduleSpec): boolean {
  return (spec.kind === 'cron' && spec.withSeconds) || (spec.kind === 'every' && spec.unit === 'seconds');
}
