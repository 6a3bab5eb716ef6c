import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Small numeric helpers shared by every bench section. */

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export function round(n: number, digits = 2): number {
  if (!Number.isFinite(n)) return n;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

let gcFn: (() => void) | undefined;
/**
 * A full GC without requiring `node --expose-gc` (npm run bench cannot pass node flags through
 * tsx): the flag is switched on at run time and `gc` is taken from a fresh context.
 */
export function forceGc(): void {
  if (!gcFn) {
    const g = (globalThis as { gc?: () => void }).gc;
    if (g) gcFn = g;
    else {
      v8.setFlagsFromString('--expose-gc');
      gcFn = runInNewContext('gc') as () => void;
    }
  }
  gcFn();
}

/**
 * Bytes allocated on the JS heap while `fn` runs: what the collector freed during it plus what is
 * still in use afterwards. v8.GCProfiler reports each collection's before/after sizes.
 */
export async function measureAllocation<T>(fn: () => Promise<T>): Promise<{ result: T; allocatedBytes: number }> {
  const profiler = new v8.GCProfiler();
  const before = process.memoryUsage().heapUsed;
  profiler.start();
  const result = await fn();
  const after = process.memoryUsage().heapUsed;
  const report = profiler.stop();
  let freed = 0;
  for (const s of report?.statistics ?? []) {
    freed += Math.max(0, s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize);
  }
  return { result, allocatedBytes: Math.max(0, after - before + freed) };
}

/** Wall and CPU (user+system) milliseconds of `fn`. CPU covers the whole process. */
export async function measureTime<T>(fn: () => Promise<T>): Promise<{ result: T; wallMs: number; cpuMs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { result, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Runs `fn` with a hard time limit; rejects with a clear message naming `what`. */
export async function withDeadline<T>(what: string, ms: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([fn(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
