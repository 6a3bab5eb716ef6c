import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/basics/clock.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { StoreWriteError } from '../../src/state/store/store.js';

function manualClock(start = 1_000): Clock & { advance(ms: number): void } {
  let now = start;
  return {
    now: () => now,
    setTimer: () => () => undefined,
    advance(ms) {
      now += ms;
    },
  };
}

describe('memory store', () => {
  it('copies values in and out, so callers cannot mutate what is stored', async () => {
    const store = createMemoryStore();
    const value = { list: [1, 2] };
    await store.set('k', value);
    value.list.push(3);
    const read = await store.get<{ list: number[] }>('k');
    read!.list.push(4);
    expect(await store.get('k')).toEqual({ list: [1, 2] });
  });

  it('expires by the injected clock', async () => {
    const clock = manualClock();
    const store = createMemoryStore(clock);
    await store.set('k', 'v', 1_000);
    clock.advance(1_000);
    expect(await store.get('k')).toBe('v');
    clock.advance(1);
    expect(await store.get('k')).toBeUndefined();
    expect(await store.delete('k')).toBe(false);
  });

  it('serialises 100 concurrent updates of one key', async () => {
    const store = createMemoryStore();
    await Promise.all(Array.from({ length: 100 }, () => store.update<number>('n', (n) => (n ?? 0) + 1)));
    expect(await store.get('n')).toBe(100);
  });

  it('fails writes loudly once closed', async () => {
    const store = createMemoryStore();
    await store.close();
    await expect(store.set('k', 1)).rejects.toBeInstanceOf(StoreWriteError);
  });
});
