import { describe, expect, it } from 'vitest';
import { shortId, timerOrder } from '../../src/state/timers/timer-work.js';

describe('timer ids and order', () => {
  it('makes short ids people can type, with no look-alike letters', () => {
    const ids = new Set(Array.from({ length: 200 }, () => shortId('s', 5)));
    for (const id of ids) expect(id).toMatch(/^s[a-hjkmnp-z2-9]{5}$/);
    expect(ids.size).toBeGreaterThan(190);
  });

  it('orders a timer lane by fire time, as fixed-width text', () => {
    const keys = [timerOrder(Date.UTC(2027, 0, 1), 'a'), timerOrder(5, 'b'), timerOrder(Date.UTC(2026, 0, 1), 'c')];
    expect([...keys].sort()).toEqual([keys[1], keys[2], keys[0]]);
    expect(keys[1]).toBe('00000000000005000:b');
  });
});
