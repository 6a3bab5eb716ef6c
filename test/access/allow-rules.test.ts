import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { matchRule, parseAllowList } from '../../src/settings/allow-rules.js';
import { loadConfig } from '../../src/settings/load-config.js';

describe('HERMES_ALLOW', () => {
  it('parses users, channels and Discord roles; unknown but well-formed ids are fine', () => {
    const r = parseAllowList(' slack:U0123ABC, slack:C0456DEF ,slack:W999, discord:100000000000000001, discord:channel:300000000000000003, discord:role:400000000000000004 ');
    expect(r).toEqual({
      ok: true,
      rules: [
        { kind: 'user', platform: 'slack', id: 'U0123ABC' },
        { kind: 'channel', platform: 'slack', id: 'C0456DEF' },
        { kind: 'user', platform: 'slack', id: 'W999' },
        { kind: 'user', platform: 'discord', id: '100000000000000001' },
        { kind: 'channel', platform: 'discord', id: '300000000000000003' },
        { kind: 'role', platform: 'discord', id: '400000000000000004' },
      ],
    });
    expect(parseAllowList(undefined)).toEqual({ ok: true, rules: [] });
  });

  it('names every malformed entry in its own line', () => {
    const r = parseAllowList('slack:U1,slack:u1,discord:role:abc,U2,slack:D123,discord:channel:,discord:12');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toHaveLength(6);
    for (const bad of ['slack:u1', 'discord:role:abc', 'U2', 'slack:D123', 'discord:channel:', 'discord:12']) {
      expect(r.errors.some((e) => e.includes(JSON.stringify(bad)) && e.startsWith('HERMES_ALLOW entry'))).toBe(true);
    }
  });

  it('matches users by id, channels by the channel or a thread\'s parent, roles by the event\'s roles', () => {
    const r = parseAllowList('slack:U1,slack:C9,discord:channel:300,discord:role:400000000000000004,discord:100000000000000001'.replace('300', '300000000000000003'));
    if (!r.ok) throw new Error(r.errors.join());
    const s = (over: Partial<Parameters<typeof matchRule>[1]>) => matchRule(r.rules, { platform: 'slack', userId: 'U2', channelIds: ['C1'], ...over });
    expect(s({})).toBeUndefined();
    expect(s({ userId: 'U1' })?.kind).toBe('user');
    expect(s({ channelIds: ['C9'] })?.kind).toBe('channel');
    expect(s({ platform: 'discord', userId: 'U1' })).toBeUndefined();
    const d = (over: Partial<Parameters<typeof matchRule>[1]>) => matchRule(r.rules, { platform: 'discord', userId: '100000000000000002', channelIds: ['300000000000000099'], ...over });
    expect(d({})).toBeUndefined();
    expect(d({ channelIds: ['thread1', '300000000000000003'] })?.kind).toBe('channel');
    expect(d({ roles: ['400000000000000004'] })?.kind).toBe('role');
    expect(d({ roles: [] })).toBeUndefined();
    expect(d({ userId: '100000000000000001' })?.kind).toBe('user');
  });

  it('config: limits default to 20 messages a minute and no daily token limit; bad values are errors', () => {
    const ok = loadConfig({}, os.tmpdir());
    expect(ok.ok && ok.config.usage).toEqual({ allow: [], ratePerMinute: 20, dailyTokens: 0, botDailyTokens: 0 });
    const set = loadConfig({ HERMES_USER_RATE: '0', HERMES_USER_DAILY_TOKENS: '50000', HERMES_ALLOW: 'slack:U1' }, os.tmpdir());
    expect(set.ok && set.config.usage).toEqual({ allow: [{ kind: 'user', platform: 'slack', id: 'U1' }], ratePerMinute: 0, dailyTokens: 50_000, botDailyTokens: 0 });
    const bad = loadConfig({ HERMES_USER_RATE: 'fast', HERMES_USER_DAILY_TOKENS: '-1', HERMES_ALLOW: 'slack:U1,everyone' }, os.tmpdir());
    expect(bad.ok).toBe(false);
    const joined = bad.ok ? '' : bad.errors.join('\n');
    expect(joined).toContain('HERMES_USER_RATE');
    expect(joined).toContain('HERMES_USER_DAILY_TOKENS');
    // main() prints each of these lines and exits 2 (test/core/config.e2e.test.ts runs that path).
    expect(joined).toContain('HERMES_ALLOW entry "everyone" is not valid');
  });
});
