import { describe, expect, it } from 'vitest';
import { getCurrentTime, isoInZone, suggestZones } from '../../tools/get-current-time.js';
import defaultExport from '../../tools/get-current-time.js';
import { ToolExecutor } from '../../src/capabilities/toolkit/executor.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import type { Clock } from '../../src/basics/clock.js';
import { makeToolContext } from './context-helper.js';

// 2026-11-29T14:08:00Z, a Sunday
const fixed: Clock = { now: () => Date.UTC(2026, 10, 29, 14, 8, 0), setTimer: (fn, ms) => { const t = setTimeout(fn, ms); return () => clearTimeout(t); } };

async function run(args: string, timezone = 'UTC') {
  const registry = new ToolRegistry({});
  registry.register(getCurrentTime);
  const executor = new ToolExecutor({ registry, defaultTimeoutMs: 1000, clock: fixed });
  const p = executor.prepareCall({ id: 'c', name: 'get_current_time', arguments: args }, { isAdmin: false });
  if (p.kind !== 'ready') return p.outcome;
  return executor.runPrepared(p, makeToolContext({ clock: fixed, defaults: { timezone } }));
}

describe('get_current_time', () => {
  it('is exported as default and named', () => {
    expect(defaultExport).toBe(getCurrentTime);
    expect(getCurrentTime.name).toBe('get_current_time');
  });

  it('gives ISO 8601 with offset and the weekday in the asked zone', async () => {
    const o = await run('{"timezone":"Asia/Shanghai"}');
    expect(o.ok).toBe(true);
    expect(o.content).toBe('2026-11-29T22:08:00+08:00 (Sunday, Asia/Shanghai)');
    expect(o.raw).toEqual({ iso: '2026-11-29T22:08:00+08:00', weekday: 'Sunday', timezone: 'Asia/Shanghai' });
  });

  it('uses the deployment default zone when none is given', async () => {
    expect((await run('{}', 'America/New_York')).content).toBe('2026-11-29T09:08:00-05:00 (Sunday, America/New_York)');
    expect((await run('{}')).content).toBe('2026-11-29T14:08:00+00:00 (Sunday, UTC)');
  });

  it('handles half-hour offsets and dates that differ from UTC', () => {
    expect(isoInZone(Date.UTC(2026, 10, 29, 14, 8, 0), 'Asia/Kolkata').iso).toBe('2026-11-29T19:38:00+05:30');
    expect(isoInZone(Date.UTC(2026, 10, 29, 2, 8, 0), 'America/Los_Angeles')).toEqual({ iso: '2026-11-28T18:08:00-08:00', weekday: 'Saturday' });
    expect(isoInZone(Date.UTC(2026, 6, 1, 12, 0, 0), 'Europe/Berlin').iso).toBe('2026-07-01T14:00:00+02:00');
  });

  it('answers an unknown zone with an error suggesting close names', async () => {
    const o = await run('{"timezone":"Asia/Shangai"}');
    expect(o).toMatchObject({ ok: false, errorKind: 'failed' });
    expect(o.content).toContain('"Asia/Shangai" is not a known IANA time zone');
    expect(o.content).toContain('"Asia/Shanghai"');
    expect(suggestZones('New York')).toEqual(['America/New_York']);
    expect(suggestZones('Beijing')).toEqual(['Asia/Shanghai']);
    expect(suggestZones('europe/berln')[0]).toBe('Europe/Berlin');
  });
});
