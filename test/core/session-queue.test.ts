import { describe, expect, it } from 'vitest';
import { createSessionQueue } from '../../src/gateway/session-queue.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('session queue', () => {
  it('runs one job at a time per key, in arrival order', async () => {
    const q = createSessionQueue(10);
    const log: string[] = [];
    const job = (name: string, ms: number) => async () => {
      log.push(`start ${name}`);
      await tick(ms);
      log.push(`end ${name}`);
    };
    await Promise.all([q.run('a', job('a1', 30)), q.run('a', job('a2', 1)), q.run('a', job('a3', 1))]);
    expect(log).toEqual(['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
  });

  it('runs different keys in parallel, up to the global limit', async () => {
    const q = createSessionQueue(3);
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        q.run(`k${i}`, async () => {
          running++;
          peak = Math.max(peak, running);
          await tick(10);
          running--;
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(q.size()).toBe(0);
  });

  it('keeps going after a failing job and reports depth', async () => {
    const q = createSessionQueue(2);
    const failed = q.run('a', async () => {
      throw new Error('boom');
    });
    const next = q.run('a', async () => 'next ran');
    expect(q.depth('a')).toBe(2);
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next ran');
    await q.idle();
    expect(q.depth('a')).toBe(0);
  });
});
