/**
 * Work handed over one at a time per key, in the order it was handed in: an adapter puts each of
 * a conversation's events in its conversation's line, so the gateway accepts them (their work rows
 * committed) in the order they arrived. Handed over at once, a later message's accept could commit
 * first and its turn be claimed and answered before the earlier one was accepted at all: the work
 * queue runs a lane's rows in posting order, but only rows that exist (settling covers the
 * milliseconds after a row is written, and not at all on a lone instance). Other keys are not held
 * up. A handover that hangs (a stalled store) holds its key's later work `waitMs` at most; then
 * they go on and `onLate` says so.
 */
export interface KeyedLine {
  run<T>(key: string, what: string, work: () => Promise<T>): Promise<T>;
}

export interface KeyedLineOptions {
  /** Longest a piece of work waits for the one before it of its key. */
  waitMs: number;
  /** The one before was still running after `waitMs`; this one went on without it. */
  onLate(key: string, what: string, waitedMs: number): void;
}

export function createKeyedLine(opts: KeyedLineOptions): KeyedLine {
  /** Per key: the last piece of work handed in, settled (never rejects) once it is done. */
  const tails = new Map<string, Promise<void>>();
  return {
    run<T>(key: string, what: string, work: () => Promise<T>): Promise<T> {
      const before = tails.get(key);
      const done = (async () => {
        if (before) {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<'late'>((resolve) => {
            timer = setTimeout(() => resolve('late'), opts.waitMs);
          });
          const waited = await Promise.race([before.then(() => 'done' as const), late]);
          clearTimeout(timer);
          if (waited === 'late') opts.onLate(key, what, opts.waitMs);
        }
        return work();
      })();
      const tail = done.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.finally(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return done;
    },
  };
}
