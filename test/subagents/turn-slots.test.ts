import { describe, expect, it } from 'vitest';
import { createTurnSlots } from '../../src/agent/subagents/turn-slots.js';

const flush = () => new Promise<void>((r) => setImmediate(r));

describe('turn slots (HERMES_MAX_PARALLEL_AGENTS)', () => {
  it('lets `max` in per turn, queues the rest in order, and keeps turns apart', async () => {
    const slots = createTurnSlots(2);
    const signal = new AbortController().signal;
    const order: string[] = [];
    const a = await slots.acquire('t1', signal);
    const b = await slots.acquire('t1', signal);
    expect(slots.full('t1')).toBe(true);
    const c = slots.acquire('t1', signal).then((r) => (order.push('c'), r));
    const d = slots.acquire('t1', signal).then((r) => (order.push('d'), r));
    // Another turn is not held up by t1's full slots.
    const other = await slots.acquire('t2', signal);
    await flush();
    expect(order).toEqual([]);
    a();
    a(); // a second release of the same slot changes nothing
    await flush();
    expect(order).toEqual(['c']);
    b();
    await flush();
    expect(order).toEqual(['c', 'd']);
    (await c)();
    (await d)();
    other();
    expect(slots.full('t1')).toBe(false);
    // All released: the next two get in at once again.
    await slots.acquire('t1', signal);
    await slots.acquire('t1', signal);
    expect(slots.full('t1')).toBe(true);
  });

  it('a waiter whose signal fires leaves the queue without taking a slot', async () => {
    const slots = createTurnSlots(1);
    const free = new AbortController().signal;
    const first = await slots.acquire('t', free);
    const stop = new AbortController();
    const waiting = slots.acquire('t', stop.signal);
    const next = slots.acquire('t', free);
    stop.abort(new Error('stopped'));
    await expect(waiting).rejects.toThrow('stopped');
    first();
    const granted = await next;
    expect(slots.full('t')).toBe(true);
    granted();
    expect(slots.full('t')).toBe(false);
    await expect(slots.acquire('t', stop.signal)).rejects.toThrow('stopped');
  });
});
