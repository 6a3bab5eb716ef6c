import { describe, expect, it } from 'vitest';
import { createSignInLimiter } from '../../src/operations/dashboard/auth.js';

/**
 * The attack: the sign-in lockout keyed on the exact address, and one IPv6 host holds a whole /64
 * (2^64 addresses), so a guesser changed its address after every few failures and was never
 * stopped. IPv6 clients are now counted per /64; IPv4 ones per address, IPv4-mapped IPv6 included.
 */

describe('sign-in lockout by network', () => {
  it('failures from different addresses of one IPv6 /64 add up, and lock the whole /64', () => {
    const clock = 1_800_000_000_000;
    const limiter = createSignInLimiter({ now: () => clock, maxFailures: 3, windowMs: 60_000 });
    limiter.failed('2001:db8:1:2::a');
    limiter.failed('2001:db8:1:2:ffff::b');
    limiter.failed('2001:0db8:0001:0002:0:0:0:c');
    expect(limiter.blockedFor('2001:db8:1:2:1234:5678:9abc:def0')).toBeGreaterThan(0);
    // Another /64 is another network.
    expect(limiter.blockedFor('2001:db8:1:3::a')).toBe(0);
  });

  it('IPv4 stays per address, written plain or IPv4-mapped', () => {
    const limiter = createSignInLimiter({ now: () => 0, maxFailures: 2, windowMs: 60_000 });
    limiter.failed('203.0.113.7');
    limiter.failed('::ffff:203.0.113.7');
    expect(limiter.blockedFor('203.0.113.7')).toBeGreaterThan(0);
    expect(limiter.blockedFor('203.0.113.8')).toBe(0);
  });
});
