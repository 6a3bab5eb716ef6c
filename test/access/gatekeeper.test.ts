import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllowList } from '../../src/settings/allow-rules.js';
import { createGatekeeper } from '../../src/gateway/access/gatekeeper.js';
import { openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import type { TraceEvent } from '../../src/runtime/trace/tracer.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { ManualClock } from '../reminders/manual-clock.js';

const ROLE = '400000000000000004';
const discordUser = (userId: string): Speaker => ({ platform: 'discord', workspaceId: '200000000000000002', userId });
const guildChannel: Conversation = { platform: 'discord', workspaceId: '200000000000000002', channelId: '300000000000000003', isDm: false };

const opened: Array<{ database: OpenedDatabase; dir: string }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    await o.database.close();
    await rm(o.dir, { recursive: true, force: true });
  }
});

async function gatekeeper(allow: string, over: { ratePerMinute?: number; dailyTokens?: number } = {}) {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-gatekeeper-'));
  const database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  opened.push({ database, dir });
  const events: TraceEvent[] = [];
  const parsed = parseAllowList(allow);
  if (!parsed.ok) throw new Error(parsed.errors.join());
  const g = createGatekeeper({ database, clock, tracer: { record: (e) => void events.push(e) }, log: pino({ level: 'silent' }), admins: ['discord:100000000000000077'], allow: parsed.rules, ratePerMinute: over.ratePerMinute ?? 20, dailyTokens: over.dailyTokens ?? 0 });
  return { g, clock, events };
}

describe('gatekeeper', () => {
  it('judges work without an event (schedules, reminders) by the roles last seen for the person', async () => {
    const { g } = await gatekeeper(`discord:role:${ROLE}`);
    const alice = discordUser('100000000000000001');
    expect(await g.isAllowed({ speaker: alice })).toBe(false); // never seen
    expect(await g.isAllowed({ speaker: alice, conversation: guildChannel, roles: [ROLE] })).toBe(true);
    expect(await g.isAllowed({ speaker: alice })).toBe(true);
    // The role was taken away; the next event says so, and later runs follow.
    expect(await g.isAllowed({ speaker: alice, conversation: guildChannel, roles: [] })).toBe(false);
    expect(await g.isAllowed({ speaker: alice })).toBe(false);
  });

  it('lets admins and the terminal through everything, and everyone through when HERMES_ALLOW is unset', async () => {
    const { g } = await gatekeeper('discord:100000000000000001', { ratePerMinute: 1, dailyTokens: 10 });
    const admin = discordUser('100000000000000077');
    const shell: Speaker = { platform: 'shell', workspaceId: 'local', userId: 'local' };
    for (let i = 0; i < 3; i++) {
      expect(await g.admitMessage({ speaker: admin, conversation: guildChannel }, 'message')).toBeUndefined();
      expect(await g.admitMessage({ speaker: shell }, 'message')).toBeUndefined();
    }
    expect(await g.admitMessage({ speaker: discordUser('100000000000000002'), conversation: guildChannel }, 'message')).toEqual({ reason: 'not_allowed' });
    const open = await gatekeeper('');
    expect(await open.g.isAllowed({ speaker: discordUser('100000000000000002') })).toBe(true);
  });

  it('checks access, then the rate, then the day, and traces each refusal with its reason and source', async () => {
    const { g, events } = await gatekeeper('', { ratePerMinute: 2, dailyTokens: 100 });
    const bob = discordUser('100000000000000011');
    const who = { speaker: bob, conversation: guildChannel };
    expect(await g.admitMessage(who, 'message')).toBeUndefined();
    await g.meter.charge(g.personOf(bob), { promptTokens: 90, completionTokens: 20 });
    expect(await g.admitMessage(who, 'command')).toMatchObject({ reason: 'daily_tokens', usage: { used: 110, limit: 100 } });
    expect(await g.admitMessage(who, 'message')).toMatchObject({ reason: 'rate_limit', perMinute: 2 });
    expect(events).toEqual([
      { type: 'refusal', reason: 'daily_tokens', source: 'command', platform: 'discord', userKey: 'discord:200000000000000002:100000000000000011' },
      { type: 'refusal', reason: 'rate_limit', source: 'message', platform: 'discord', userKey: 'discord:200000000000000002:100000000000000011' },
    ]);
  });

  it('the not-allowed notice is due once an hour per person', async () => {
    const { g, clock } = await gatekeeper('discord:100000000000000001');
    const bob = discordUser('100000000000000011');
    expect(await g.noticeDue(bob)).toBe(true);
    expect(await g.noticeDue(bob)).toBe(false);
    expect(await g.noticeDue(discordUser('100000000000000012'))).toBe(true);
    clock.advance(3_600_001);
    expect(await g.noticeDue(bob)).toBe(true);
  });
});
