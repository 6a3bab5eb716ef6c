/** Time as a dependency, so tests drive it without faking globals. */
export interface Clock {
  now(): number;
  /** Schedules fn after ms; returns a cancel function. */
  setTimer(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
    t.unref?.();
    return () => clearTimeout(t);
  },
};
