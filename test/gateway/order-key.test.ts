import { describe, expect, it } from 'vitest';
import { clockOrderKey } from '../../src/gateway/order-key.js';
import { slackOrder } from '../../adapters/slack/inbound-event.js';
import { snowflakeOrder } from '../../adapters/discord/inbound.js';

/** Order keys compare as text; these hold the adapters to the platforms' own order. */
const sorted = (keys: Array<string | undefined>) => [...keys].sort();

describe('order keys', () => {
  it("sort Slack messages by ts, also across a change in the seconds' digit count", () => {
    const ts = ['999999999.000900', '1700000000.000100', '1700000000.000099', '1700000001.000001'];
    const keys = ts.map(slackOrder);
    expect(sorted(keys)).toEqual([keys[0], keys[2], keys[1], keys[3]]);
    expect(slackOrder('not a ts')).toBeUndefined();
  });

  it('sort Discord snowflakes numerically, whatever their length', () => {
    const ids = ['175928847299117063', '1100000000000000000', '175928847299117064', '99999999999999999'];
    const keys = ids.map(snowflakeOrder);
    expect(sorted(keys)).toEqual([keys[3], keys[0], keys[2], keys[1]]);
    // 175928847299117063 was made at 2016-04-30T11:18:25.796Z (Discord's documented example).
    expect(snowflakeOrder('175928847299117063')!.startsWith(String(Date.parse('2016-04-30T11:18:25.796Z') * 1000).padStart(17, '0'))).toBe(true);
  });

  it('place clock-ordered work (a resume) after posts written before it and before posts written after', () => {
    const t = Date.parse('2026-01-01T00:00:00Z');
    const before = slackOrder(`${t / 1000 - 1}.000000`);
    const after = slackOrder(`${t / 1000 + 1}.000000`);
    expect(sorted([after, clockOrderKey(t, 'resume:x'), before])).toEqual([before, clockOrderKey(t, 'resume:x'), after]);
  });
});
