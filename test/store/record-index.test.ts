import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { insertSorted, recordIndexes, shortId } from '../../src/state/store/record-index.js';

describe('record indexes', () => {
  it('keeps timed entries sorted and replaces an id already there', () => {
    let entries = insertSorted([], ['b', 20]);
    entries = insertSorted(entries, ['a', 10]);
    entries = insertSorted(entries, ['c', 30]);
    entries = insertSorted(entries, ['a', 40]);
    expect(entries).toEqual([['b', 20], ['c', 30], ['a', 40]]);
  });

  it('makes ids from the prefix and the unambiguous alphabet', () => {
    const ids = new Set(Array.from({ length: 200 }, () => shortId('s', 5)));
    for (const id of ids) expect(id).toMatch(/^s[a-hjkmnp-z2-9]{5}$/);
    expect(ids.size).toBeGreaterThan(190);
  });

  it('edits indexes on the store and only sets a record when the change says so', async () => {
    const store = createMemoryStore();
    const index = recordIndexes<{ n: number }>(store);
    await index.putTimed('due', 'x', 5);
    await index.putTimed('due', 'y', 1);
    expect(await index.timed('due')).toEqual([['y', 1], ['x', 5]]);
    await index.removeTimed('due', ['y', 'missing']);
    expect(await index.timed('due')).toEqual([['x', 5]]);

    await store.set('owner', ['x', 'y']);
    await index.removeIds('owner', ['x']);
    expect(await index.ids('owner')).toEqual(['y']);
    expect(await index.ids('nobody')).toEqual([]);

    expect(await index.casRecord('rec', () => ({ n: 1 }))).toBeUndefined();
    expect(await store.get('rec')).toBeUndefined();
    await store.set('rec', { n: 1 });
    expect(await index.casRecord('rec', (r) => (r.n === 1 ? { n: 2 } : undefined))).toEqual({ n: 2 });
    expect(await index.casRecord('rec', (r) => (r.n === 1 ? { n: 3 } : undefined))).toBeUndefined();
    expect(await store.get('rec')).toEqual({ n: 2 });
  });
});
