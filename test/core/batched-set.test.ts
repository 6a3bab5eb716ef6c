import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createBatchedSet } from '../../src/store/batched-set.js';
import { StoreWriteError, type Store } from '../../src/store/store.js';

describe('batched set', () => {
  it('applies 500 concurrent adds and removes in a few writes, each durable when it resolves', async () => {
    const inner = createMemoryStore();
    let writes = 0;
    const store: Store = { ...inner, update: (k, fn) => { writes++; return inner.update(k, fn); } };
    const set = createBatchedSet(store, 'idx');
    await Promise.all(Array.from({ length: 500 }, (_, i) => set.add(`m${i}`)));
    expect((await set.list()).length).toBe(500);
    expect(writes).toBeLessThan(10);
    await Promise.all(Array.from({ length: 250 }, (_, i) => set.remove(`m${i * 2}`)));
    const left = await set.list();
    expect(left).toHaveLength(250);
    expect(left.every((id) => Number(id.slice(1)) % 2 === 1)).toBe(true);
  });

  it('rejects the callers of a failed write and keeps working afterwards', async () => {
    const inner = createMemoryStore();
    let failing = true;
    const store: Store = { ...inner, update: (k, fn) => (failing ? Promise.reject(new StoreWriteError('disk full')) : inner.update(k, fn)) };
    const set = createBatchedSet(store, 'idx');
    await expect(set.add('a')).rejects.toThrow('disk full');
    failing = false;
    await set.add('b');
    expect(await set.list()).toEqual(['b']);
  });
});
