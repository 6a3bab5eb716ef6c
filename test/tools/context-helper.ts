import pino from 'pino';
import { systemClock } from '../../src/basics/clock.js';
import { NetRefusedError, type NetClient, type NetRequest, type NetResponse } from '../../src/capabilities/net/net-client.js';
import type { FactView, ReminderView, ToolContext, UserFacts, UserReminders } from '../../src/capabilities/toolkit/tool-api.js';

/** Facts kept in an array; recall matches a case-insensitive substring. */
export function memoryFacts(clock = systemClock): UserFacts & { items: FactView[] } {
  const items: FactView[] = [];
  let next = 1;
  return {
    items,
    async remember(text) {
      const same = items.find((f) => f.text.toLowerCase() === text.toLowerCase());
      if (same) return { fact: same, merged: true };
      const now = clock.now();
      const fact = { id: `f${next++}`, text, createdAt: now, updatedAt: now };
      items.push(fact);
      return { fact, merged: false };
    },
    async recall(query, limit = 20) {
      const q = query?.toLowerCase();
      return items.filter((f) => !q || f.text.toLowerCase().includes(q)).slice(0, limit);
    },
    async forget(idOrAll) {
      const before = items.length;
      const keep = idOrAll === 'all' ? [] : items.filter((f) => f.id !== idOrAll);
      items.splice(0, items.length, ...keep);
      return before - items.length;
    },
  };
}

/** Reminders kept in an array; nothing ever fires. */
export function memoryReminders(clock = systemClock): UserReminders & { items: ReminderView[] } {
  const items: ReminderView[] = [];
  let next = 1;
  return {
    items,
    async create(text, dueAt) {
      const r: ReminderView = { id: `r${next++}`, text, dueAt, createdAt: clock.now(), status: 'scheduled' };
      items.push(r);
      return r;
    },
    async list() {
      return items.filter((r) => r.status === 'scheduled');
    },
    async cancel(id) {
      const r = items.find((x) => x.id === id && x.status === 'scheduled');
      if (r) r.status = 'cancelled';
      return Boolean(r);
    },
  };
}

/** A NetClient that answers from a handler; by default it refuses everything (tests stay offline). */
export function fakeNet(handler?: (req: NetRequest) => Promise<NetResponse> | NetResponse): NetClient & { requests: NetRequest[] } {
  const requests: NetRequest[] = [];
  return {
    requests,
    async request(req) {
      requests.push(req);
      if (!handler) throw new NetRefusedError(`refused: ${req.url} (no network in this test)`);
      return handler(req);
    },
    async check(url) {
      if (!handler) throw new NetRefusedError(`refused: ${url} (no network in this test)`);
    },
  };
}

/** A complete ToolContext with in-memory fakes; override any part. */
export function makeToolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  const clock = overrides.clock ?? systemClock;
  return {
    signal: new AbortController().signal,
    clock,
    speaker: { platform: 'shell', workspaceId: 'local', userId: 'tester', displayName: 'Tester' },
    isAdmin: false,
    conversation: { platform: 'shell', workspaceId: 'local', channelId: 'terminal', isDm: true },
    facts: memoryFacts(clock),
    reminders: memoryReminders(clock),
    net: fakeNet(),
    settings: {},
    defaults: { timezone: 'UTC' },
    log: pino({ level: 'silent' }),
    ...overrides,
  };
}
