import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { createCachedStore } from '../../src/state/store/cached-store.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import type { Store } from '../../src/state/store/store.js';
import { createRateLimiter } from '../../src/gateway/access/rate-limiter.js';
import { createUsageMeter, DailyBudgetExhausted } from '../../src/state/usage/usage-meter.js';
import type { ModelProvider } from '../../src/runtime/provider/provider.js';
import { ManualClock } from '../reminders/manual-clock.js';

let dir: string;
const open: Store[] = [];
const sqlite = async () => {
  const s = createCachedStore(await createSqliteStore({ file: path.join(dir, 'hermes.sqlite') }));
  open.push(s);
  return s;
};

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-counters-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close().catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

describe('Store.increment', () => {
  it('loses no increment when many run at once, and the total survives a reopen (SQLite on disk)', async () => {
    const store = await sqlite();
    const totals = await Promise.all(Array.from({ length: 50 }, () => store.increment('c', 3)));
    expect(totals.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => (i + 1) * 3));
    await store.close();
    open.length = 0;
    const again = await sqlite();
    expect(await again.get('c')).toBe(150);
    expect(await again.increment('c', 1)).toBe(151);
  });

  it('sets the expiry when the key is created and keeps it on later increments', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const store = createMemoryStore(clock);
    expect(await store.increment('n', 1, 1000)).toBe(1);
    clock.advance(600);
    expect(await store.increment('n', 1, 1000)).toBe(2);
    clock.advance(600); // 1200 ms after creation: gone, though the last increment was 600 ms ago
    expect(await store.get('n')).toBeUndefined();
    expect(await store.increment('n', 1, 1000)).toBe(1);
  });

  it('SQLite: an expired counter starts again from zero', async () => {
    // Keyv judges TTLs by Date.now(): only the date is faked, timers and I/O stay real.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const store = await sqlite();
      expect(await store.increment('short', 5, 30)).toBe(5);
      expect(await store.increment('short', 5, 30)).toBe(10);
      vi.setSystemTime(Date.now() + 60);
      expect(await store.increment('short', 5, 30)).toBe(5);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('rate limiter (token bucket)', () => {
  it('lets a burst of the limit through, refuses the next with the wait, refills one per interval', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    const rate = createRateLimiter({ store: await sqlite(), clock, perMinute: 20 });
    for (let i = 0; i < 20; i++) expect((await rate.take('slack:U1')).ok).toBe(true);
    expect(await rate.take('slack:U1')).toEqual({ ok: false, retryAfterMs: 3000 });
    expect((await rate.take('slack:U2')).ok).toBe(true); // per person
    clock.advance(1000);
    expect(await rate.take('slack:U1')).toEqual({ ok: false, retryAfterMs: 2000 });
    clock.advance(2000);
    expect((await rate.take('slack:U1')).ok).toBe(true);
    expect((await rate.take('slack:U1')).ok).toBe(false);
    clock.advance(60_000); // a quiet minute fills the bucket again, never beyond it
    for (let i = 0; i < 20; i++) expect((await rate.take('slack:U1')).ok).toBe(true);
    expect((await rate.take('slack:U1')).ok).toBe(false);
  });

  it('refused messages take no token, so a flood cannot push the wait out', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    const rate = createRateLimiter({ store: createMemoryStore(clock), clock, perMinute: 2 });
    await rate.take('p');
    await rate.take('p');
    for (let i = 0; i < 100; i++) expect(await rate.take('p')).toEqual({ ok: false, retryAfterMs: 30_000 });
    clock.advance(30_000);
    expect((await rate.take('p')).ok).toBe(true);
  });
});

describe('usage meter', () => {
  const fakeModel = (usage: { promptTokens: number; completionTokens: number }, calls: string[]): ModelProvider => ({
    model: 'm',
    async complete() {
      calls.push('call');
      return { content: 'x', toolCalls: [], parseErrors: [], usage, finishReason: 'stop', model: 'm' };
    },
  });

  it('counts prompt + completion per person per UTC day, refuses the call after the line, resets at midnight', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 23, 0));
    const meter = createUsageMeter({ store: await sqlite(), clock, dailyLimit: 1000 });
    const calls: string[] = [];
    const metered = meter.provider(fakeModel({ promptTokens: 400, completionTokens: 200 }, calls), { person: 'slack:U1', exempt: false });
    await metered.complete({ messages: [], tools: [] });
    await metered.complete({ messages: [], tools: [] }); // 600 → 1200: the call that crosses finishes
    const refused = await metered.complete({ messages: [], tools: [] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DailyBudgetExhausted);
    expect((refused as DailyBudgetExhausted).usage).toEqual({ used: 1200, limit: 1000, resetsAt: Date.UTC(2026, 0, 2) });
    expect(calls).toHaveLength(2);
    expect(await meter.exhausted({ person: 'slack:U2', exempt: false })).toBeUndefined();
    expect(await meter.exhausted({ person: 'slack:U1', exempt: true })).toBeUndefined();
    clock.advance(3600_000);
    expect((await meter.today('slack:U1')).used).toBe(0);
    await metered.complete({ messages: [], tools: [] });
    expect(calls).toHaveLength(3);
  });

  it('lists the heaviest users of the day, and an exempt payer is still counted', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 9));
    const meter = createUsageMeter({ store: await sqlite(), clock, dailyLimit: 10 });
    const calls: string[] = [];
    await meter.provider(fakeModel({ promptTokens: 50, completionTokens: 0 }, calls), { person: 'discord:7', exempt: true }).complete({ messages: [], tools: [] });
    await meter.charge('slack:U1', { promptTokens: 3, completionTokens: 4 });
    await meter.charge('slack:U2', { promptTokens: 20, completionTokens: 1 });
    await meter.charge('slack:U1', { promptTokens: 1, completionTokens: 0 });
    expect(await meter.top(2)).toEqual([{ person: 'discord:7', used: 50 }, { person: 'slack:U2', used: 21 }]);
    expect(await meter.top(10)).toHaveLength(3);
  });
});

describe('cached store and counters', () => {
  it('a read overlapping an increment never leaves the old value cached', async () => {
    const store = await sqlite();
    for (let round = 1; round <= 30; round++) {
      const [, , after] = await Promise.all([store.get('race'), store.increment('race', 1), store.get('race')]);
      expect([round - 1, round, undefined]).toContain(after);
      expect(await store.get('race')).toBe(round);
    }
  });
});
