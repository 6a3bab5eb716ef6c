import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { storeKey, type Store } from '../../src/state/store/store.js';
import { createInbox } from '../../src/gateway/inbox.js';
import { createReceiptJournal } from '../../src/gateway/receipts.js';
import type { InboundMessage } from '../../src/basics/types.js';

/** Counts writes, to hold the journals to one store write per accepted request. */
function counting(inner: Store) {
  const writes: string[] = [];
  const store: Store = {
    ...inner,
    set: (k, v, ttl) => (writes.push(`set ${k}`), inner.set(k, v, ttl)),
    update: (k, fn, o) => (writes.push(`update ${k}`), inner.update(k, fn, o)),
    delete: (k) => (writes.push(`delete ${k}`), inner.delete(k)),
  };
  return { store, writes };
}

const message = (id: string): InboundMessage => ({
  id,
  conversation: { platform: 'slack', workspaceId: 'T1', channelId: 'C1', isDm: false },
  speaker: { platform: 'slack', workspaceId: 'T1', userId: 'U1' },
  text: `text of ${id}`,
  mentioned: true,
});

describe('durable journals (receipts before the ack, inbox before the turn)', () => {
  it('a receipt costs one write to add and one to clear; pending() lists what was not cleared, oldest first', async () => {
    const { store, writes } = counting(createMemoryStore());
    let t = 1_000;
    const receipts = createReceiptJournal(store, 'slack', () => t++);
    await receipts.add('event:Ev2', { n: 2 });
    expect(writes).toEqual([`set ${storeKey('receipt', 'slack', 'event:Ev2')}`]);
    await receipts.add('event:Ev1_%', { n: 1 });
    await receipts.add('event:Ev3', { n: 3 });
    await receipts.done('event:Ev3');
    expect(writes).toHaveLength(4);
    // Another platform's journal is apart.
    await createReceiptJournal(store, 'discord').add('event:Ev9', {});
    const pending = await createReceiptJournal(store, 'slack').pending();
    expect(pending.map((r) => [r.id, r.body])).toEqual([['event:Ev2', { n: 2 }], ['event:Ev1_%', { n: 1 }]]);
  });

  it('an accepted message costs one write; pending() lists the unfinished ones', async () => {
    const { store, writes } = counting(createMemoryStore());
    const inbox = createInbox(store);
    await inbox.add(message('C1:1.0'));
    expect(writes).toEqual([`set ${storeKey('inbox', 'C1:1.0')}`]);
    await inbox.add(message('C1:2.0'));
    await inbox.done('C1:1.0');
    expect((await createInbox(store).pending()).map((e) => e.message.id)).toEqual(['C1:2.0']);
  });

  it('finds entries an earlier version left with its index key, and drops that index', async () => {
    const store = createMemoryStore();
    await store.set(storeKey('inbox', 'C1:9.0'), { message: message('C1:9.0'), receivedAt: 5 });
    await store.set('inbox:index', ['C1:9.0']);
    await store.set(storeKey('receipt', 'slack', 'event:Old'), { id: 'event:Old', body: { old: true }, receivedAt: 5 });
    await store.set(storeKey('receipt', 'slack', 'index'), ['event:Old']);
    expect((await createInbox(store).pending()).map((e) => e.message.id)).toEqual(['C1:9.0']);
    expect((await createReceiptJournal(store, 'slack').pending()).map((r) => r.id)).toEqual(['event:Old']);
    expect(await store.get('inbox:index')).toBeUndefined();
    expect(await store.get(storeKey('receipt', 'slack', 'index'))).toBeUndefined();
  });
});
