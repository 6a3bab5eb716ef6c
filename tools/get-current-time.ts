import * as z from 'zod';
import { closestMatches, editDistance } from '../src/basics/text/closest-match.js';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

const input = z.object({
  timezone: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe('IANA time zone such as "Asia/Shanghai" or "Europe/Berlin"; omit for the deployment default'),
});

/**
 * Places people (and models) name that are not IANA zone names, and modern names that this
 * runtime's ICU lists under an older spelling; used only to suggest, never to guess.
 */
const EXTRA_NAMES: Record<string, string> = {
  beijing: 'Asia/Shanghai', 'hong kong': 'Asia/Hong_Kong', mumbai: 'Asia/Kolkata', delhi: 'Asia/Kolkata',
  'new delhi': 'Asia/Kolkata', bangalore: 'Asia/Kolkata', kolkata: 'Asia/Kolkata', 'san francisco': 'America/Los_Angeles',
  seattle: 'America/Los_Angeles', pst: 'America/Los_Angeles', pdt: 'America/Los_Angeles', washington: 'America/New_York',
  boston: 'America/New_York', edt: 'America/New_York', cet: 'Europe/Berlin', cest: 'Europe/Berlin', kyiv: 'Europe/Kyiv',
  'ho chi minh': 'Asia/Ho_Chi_Minh', kathmandu: 'Asia/Kathmandu', yangon: 'Asia/Yangon',
};

/**
 * Returns the zone name to show, or throws a model-readable error naming close zone names.
 * The model's own spelling is kept when valid (ICU may report "Asia/Kolkata" as "Asia/Calcutta").
 */
function checkZone(zone: string): string {
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === zone.toLowerCase() ? resolved : zone;
  } catch {
    const suggestions = suggestZones(zone);
    const hint = suggestions.length ? ` Did you mean ${suggestions.map((s) => `"${s}"`).join(', ')}?` : '';
    throw new Error(`"${zone}" is not a known IANA time zone.${hint} Use a name like "Europe/Berlin", "America/New_York" or "UTC".`);
  }
}

/** Close names by whole name and by city part, so "New York" finds "America/New_York". */
export function suggestZones(zone: string, limit = 3): string[] {
  const all = [...Intl.supportedValuesOf('timeZone'), 'UTC'];
  const extra = EXTRA_NAMES[zone.trim().replace(/[\s_]+/g, ' ').toLowerCase()];
  if (extra) return [extra];
  const wanted = zone.trim().replace(/\s+/g, '_').toLowerCase();
  const city = (z: string) => z.slice(z.lastIndexOf('/') + 1).toLowerCase();
  const byCity = all.filter((z) => city(z) === wanted || city(z) === city(wanted));
  if (byCity.length) return byCity.slice(0, limit);
  const close = closestMatches(wanted, all, limit * 3).filter(
    (z) => editDistance(wanted, z) <= Math.max(3, Math.floor(z.length / 3)) || editDistance(city(wanted), city(z)) <= 2,
  );
  return close.length ? close.slice(0, limit) : closestMatches(city(wanted), all.map(city), limit).map((c) => all.find((z) => city(z) === c) ?? c);
}

/** `2026-11-29T22:08:00+08:00` for the instant `ms` in `zone`. */
export function isoInZone(ms: number, zone: string): { iso: string; weekday: string } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'longOffset',
  }).formatToParts(new Date(ms));
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  const offsetName = get('timeZoneName'); // "GMT+08:00", "GMT-05:30", or "GMT" for zero
  const offset = offsetName === 'GMT' ? '+00:00' : offsetName.replace('GMT', '');
  const year = get('year');
  const month = get('month');
  const day = get('day');
  const weekday = WEEKDAYS[new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))).getUTCDay()] ?? '';
  return { iso: `${year}-${month}-${day}T${get('hour')}:${get('minute')}:${get('second')}${offset}`, weekday };
}

export const getCurrentTime = defineTool({
  name: 'get_current_time',
  description:
    'Get the current date and time as ISO 8601 with UTC offset, plus the weekday. Use it whenever the answer depends on today\'s date or the time somewhere.',
  input,
  category: 'general',
  timeoutMs: 2000,
  async run({ timezone }, ctx) {
    const zone = checkZone(timezone?.trim() || ctx.defaults.timezone || 'UTC');
    const { iso, weekday } = isoInZone(ctx.clock.now(), zone);
    return { summary: `${iso} (${weekday}, ${zone})`, raw: { iso, weekday, timezone: zone } };
  },
});

export default getCurrentTime;
