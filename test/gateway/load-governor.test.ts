import { describe, expect, it } from 'vitest';
import { createLoadGovernor, nextLimit, type LoadSample } from '../../src/gateway/load-governor.js';
import { createSessionQueue } from '../../src/gateway/session-queue.js';

const bounds = { min: 4, max: 64 };
const hot: LoadSample = { utilisation: 0.99, lagMs: 5 };
const lagging: LoadSample = { utilisation: 0.5, lagMs: 80 };
const cool: LoadSample = { utilisation: 0.3, lagMs: 2 };
const warm: LoadSample = { utilisation: 0.93, lagMs: 5 };

/** A governor whose windows the test hands in one by one. */
function scripted(max: number) {
  let tick: () => void = () => undefined;
  let next: LoadSample = cool;
  const governor = createLoadGovernor({
    max,
    sampler: { read: () => next },
    every: (fn) => {
      tick = fn;
      return () => undefined;
    },
  });
  return { governor, window: (s: LoadSample) => ((next = s), tick()) };
}

describe('load governor policy', () => {
  it('cuts the limit by a quarter when the loop is busy or late, never below the floor', () => {
    expect(nextLimit(64, hot, bounds)).toBe(48);
    expect(nextLimit(64, lagging, bounds)).toBe(48);
    expect(nextLimit(5, hot, bounds)).toBe(4);
    expect(nextLimit(4, hot, bounds)).toBe(4);
  });

  it('grows by a tenth (at least one) while the loop is cool, never above HERMES_MAX_CONCURRENT_TURNS', () => {
    expect(nextLimit(16, cool, bounds)).toBe(18);
    expect(nextLimit(4, cool, bounds)).toBe(5);
    expect(nextLimit(63, cool, bounds)).toBe(64);
    expect(nextLimit(64, cool, bounds)).toBe(64);
  });

  it('holds steady in between', () => {
    expect(nextLimit(20, warm, bounds)).toBe(20);
  });
});

describe('load governor', () => {
  it('starts at 16 (or the ceiling if lower) and follows the windows', () => {
    const { governor, window } = scripted(64);
    expect(governor.limit()).toBe(16);
    window(cool);
    expect(governor.limit()).toBe(18);
    window(hot);
    expect(governor.limit()).toBe(13);
    expect(scripted(3).governor.limit()).toBe(3);
  });

  it('lets waiting jobs start when the limit rises, oldest first, and never runs more than the limit', async () => {
    const { governor, window } = scripted(64);
    for (let i = 0; i < 20; i++) window(hot); // down to the floor of 4
    expect(governor.limit()).toBe(4);
    const queue = createSessionQueue(governor);
    const started: number[] = [];
    const release: Array<() => void> = [];
    let running = 0;
    let peak = 0;
    const jobs = Array.from({ length: 10 }, (_, i) =>
      queue.run(`s${i}`, () => {
        started.push(i);
        running++;
        peak = Math.max(peak, running);
        return new Promise<void>((r) => release.push(() => ((running--), r())));
      }),
    );
    // An admitted job starts one event-loop turn later (the queue yields with setImmediate before
    // each job): two turns after a change, every job it admitted has started, and no other has.
    const settle = async () => {
      for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
    };
    await settle();
    expect(started).toEqual([0, 1, 2, 3]);
    window(cool); // 4 → 5
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    window(cool); // 5 → 6
    window(cool); // 6 → 7
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(peak).toBe(7);
    while (release.length) {
      release.shift()!();
      await settle();
    }
    await Promise.all(jobs);
    expect(started).toHaveLength(10);
    expect(peak).toBeLessThanOrEqual(7);
  });
});
