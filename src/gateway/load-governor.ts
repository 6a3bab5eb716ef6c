import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';

/**
 * How many turns may be running right now, adapted to how busy this process's event loop is.
 *
 * Why: the event loop that runs turns also answers Slack's HTTP requests, Discord's heartbeats and
 * the health check. With a fixed limit, 500 busy sessions kept it saturated: every callback waited
 * behind hundreds of others, and an acknowledgement Slack expects within 3 s took up to 7 s. A turn
 * that waits for a slot loses nothing — its message is already durable and acknowledged — so when
 * the loop runs hot the governor lets fewer turns start, and more again once it cools down
 * (additive increase, multiplicative decrease, as TCP does with a congested link). Running turns are
 * never interrupted; HERMES_MAX_CONCURRENT_TURNS stays the ceiling.
 */
export interface LoadGovernor {
  /** Turns allowed to run at once right now (between the floor and HERMES_MAX_CONCURRENT_TURNS). */
  limit(): number;
  /** `fn` runs whenever the limit rises, so jobs waiting for a slot can start. */
  onRaise(fn: () => void): void;
  stop(): void;
}

/**
 * One window of the event loop: the share of time it was busy (0–1, smoothed over the last few
 * windows: turns arrive in bursts, and one busy tenth of a second says little) and its worst delay
 * in the window (the symptom that matters: what an acknowledgement would have waited).
 */
export interface LoadSample {
  utilisation: number;
  lagMs: number;
}

export interface GovernorBounds {
  min: number;
  max: number;
}

/** The loop counts as hot above either of these; below both of the cool ones the limit grows. */
const HOT = { utilisation: 0.97, lagMs: 30 };
const COOL = { utilisation: 0.9, lagMs: 15 };
/** Weight of the newest window in the smoothed utilisation (about the last half second counts). */
const SMOOTHING = 0.3;
const DECREASE = 0.75;
const INCREASE = 0.1;
/** A start-up burst of queued turns begins this wide and grows from there. */
const INITIAL = 16;
const MIN_LIMIT = 4;
const SAMPLE_EVERY_MS = 100;

/** The policy, pure: the next limit after one window. */
export function nextLimit(current: number, sample: LoadSample, bounds: GovernorBounds): number {
  if (sample.utilisation > HOT.utilisation || sample.lagMs > HOT.lagMs) return Math.max(bounds.min, Math.floor(current * DECREASE));
  if (sample.utilisation < COOL.utilisation && sample.lagMs < COOL.lagMs) return Math.min(bounds.max, current + Math.max(1, Math.ceil(current * INCREASE)));
  return Math.min(bounds.max, Math.max(bounds.min, current));
}

export interface GovernorOptions {
  max: number;
  /** Reads one window of the loop (eventLoopSampler in production, scripted in tests). */
  sampler: LoadSampler;
  /** Runs `fn` every `ms` until the returned function is called (setInterval in production). */
  every?: (fn: () => void, ms: number) => () => void;
}

export function createLoadGovernor(opts: GovernorOptions): LoadGovernor {
  const bounds = { min: Math.min(MIN_LIMIT, opts.max), max: opts.max };
  let current = Math.min(INITIAL, opts.max);
  const raised: Array<() => void> = [];
  const every = opts.every ?? intervalTimer;
  const cancel = every(() => {
    const next = nextLimit(current, opts.sampler.read(), bounds);
    const rose = next > current;
    current = next;
    if (rose) for (const fn of raised) fn();
  }, SAMPLE_EVERY_MS);
  return {
    limit: () => current,
    onRaise: (fn) => void raised.push(fn),
    stop: () => {
      cancel();
      opts.sampler.stop?.();
    },
  };
}

/** A fixed limit (tests and tools that want no adaptation). */
export function fixedLimit(max: number): LoadGovernor {
  return { limit: () => max, onRaise: () => undefined, stop: () => undefined };
}

export interface LoadSampler {
  read(): LoadSample;
  stop?(): void;
}

/** Event-loop utilisation and the worst timer delay since the previous read. */
export function eventLoopSampler(): LoadSampler {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  let utilisation = 0;
  const read = (): LoadSample => {
    const now = performance.eventLoopUtilization();
    utilisation = SMOOTHING * performance.eventLoopUtilization(now, last).utilization + (1 - SMOOTHING) * utilisation;
    last = now;
    // max is 0 (or absurd) before the first sample lands: treat as no delay.
    const lagMs = delay.count > 0 ? Math.max(0, delay.max / 1e6 - 10) : 0;
    delay.reset();
    return { utilisation, lagMs };
  };
  return { read, stop: () => delay.disable() };
}

function intervalTimer(fn: () => void, ms: number): () => void {
  const t = setInterval(fn, ms);
  t.unref();
  return () => clearInterval(t);
}
