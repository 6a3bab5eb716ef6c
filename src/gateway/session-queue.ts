import type { LoadGovernor } from './load-governor.js';

/**
 * One job at a time per key (a conversation), in arrival order; different keys run in parallel
 * up to the governor's limit overall (a number: a fixed limit). Jobs never reject into the queue:
 * a failing job is the job's own business (the gateway catches and answers the user).
 */
export interface SessionQueue {
  run<T>(key: string, job: () => Promise<T>): Promise<T>;
  /** Jobs queued or running for a key (0 when idle). */
  depth(key: string): number;
  /** Jobs queued or running overall. */
  size(): number;
  idle(): Promise<void>;
}

export function createSessionQueue(limit: number | Pick<LoadGovernor, 'limit' | 'onRaise'>): SessionQueue {
  const allowed = typeof limit === 'number' ? () => limit : () => limit.limit();
  const tails = new Map<string, Promise<unknown>>();
  const depths = new Map<string, number>();
  let running = 0;
  let total = 0;
  const waiters: Array<() => void> = [];
  let idleWaiters: Array<() => void> = [];

  const acquire = (): Promise<void> => {
    if (running < allowed() && waiters.length === 0) {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => waiters.push(() => { running++; resolve(); }));
  };
  /** Starts waiting jobs, oldest first, while there is room (bounded by the waiters there are). */
  const admit = () => {
    while (waiters.length > 0 && running < allowed()) waiters.shift()!();
  };
  const release = () => {
    running--;
    admit();
  };
  if (typeof limit !== 'number') limit.onRaise(admit);

  return {
    run(key, job) {
      depths.set(key, (depths.get(key) ?? 0) + 1);
      total++;
      const prev = tails.get(key) ?? Promise.resolve();
      const result = prev.then(async () => {
        await acquire();
        // Yield to the event loop before each job: reads served from the store's cache resolve
        // as microtasks, so hundreds of jobs released at once would otherwise run back to back
        // without letting a single HTTP request (a Slack ack) or timer through.
        await new Promise<void>((resolve) => setImmediate(resolve));
        try {
          return await job();
        } finally {
          release();
        }
      });
      const tail = result.then(() => undefined, () => undefined).then(() => {
        const d = (depths.get(key) ?? 1) - 1;
        total--;
        if (d === 0) {
          depths.delete(key);
          if (tails.get(key) === tail) tails.delete(key);
        } else depths.set(key, d);
        if (total === 0) {
          const w = idleWaiters;
          idleWaiters = [];
          w.forEach((f) => f());
        }
      });
      tails.set(key, tail);
      return result;
    },
    depth: (key) => depths.get(key) ?? 0,
    size: () => total,
    idle: () => (total === 0 ? Promise.resolve() : new Promise((r) => idleWaiters.push(r))),
  };
}
