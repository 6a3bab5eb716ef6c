import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { createCachedStore } from '../../src/state/store/cached-store.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import type { Store } from '../../src/state/store/store.js';
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
