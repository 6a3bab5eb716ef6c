/**
 * HERMES_MAX_PARALLEL_AGENTS: how many sub-agents of one turn run at the same time. Further
 * delegations of that turn wait in call order for a slot; a wait ends early when its signal fires.
 * Other turns (other sessions) have slots of their own: one busy conversation never holds up another.
 */
export interface TurnSlots {
  /** Resolves with a release function once a slot is free; rejects with the signal's reason when aborted first. */
  acquire(turnId: string, signal: AbortSignal): Promise<() => void>;
  /** Whether a call for this turn would have to wait right now. */
  full(turnId: string): boolean;
}

interface Turn {
  active: number;
  waiting: Array<() => void>;
}

export function createTurnSlots(max: number): TurnSlots {
  const turns = new Map<string, Turn>();

  function release(turnId: string, t: Turn): void {
    const next = t.waiting.shift();
    if (next) return next(); // the slot passes straight on: `active` stays the same
    t.active -= 1;
    if (t.active === 0) turns.delete(turnId);
  }

  return {
    full: (turnId) => (turns.get(turnId)?.active ?? 0) >= max,
    acquire(turnId, signal) {
      if (signal.aborted) return Promise.reject(signal.reason);
      let t = turns.get(turnId);
      if (!t) turns.set(turnId, (t = { active: 0, waiting: [] }));
      const turn = t;
      let released = false;
      const releaser = () => {
        if (released) return;
        released = true;
        release(turnId, turn);
      };
      if (turn.active < max) {
        turn.active += 1;
        return Promise.resolve(releaser);
      }
      return new Promise((resolve, reject) => {
        const grant = () => {
          signal.removeEventListener('abort', onAbort);
          resolve(releaser);
        };
        const onAbort = () => {
          const i = turn.waiting.indexOf(grant);
          if (i >= 0) turn.waiting.splice(i, 1);
          reject(signal.reason);
        };
        turn.waiting.push(grant);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}
