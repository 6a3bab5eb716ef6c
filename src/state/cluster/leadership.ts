import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { Leases } from './lease.js';

/**
 * One instance at a time does something (holds the Discord gateway connection), chosen through a
 * lease in the database. Every instance tries every `failoverMs / 5`; the holder renews at the
 * same pace, and the lease lives `0.6 × failoverMs`. So when the holder dies, the lease expires
 * at most 0.6 × failoverMs later and another instance takes it at its next try: elected within
 * 0.8 × failoverMs, leaving the rest for it to connect.
 *
 * An instance that cannot renew (the database is unreachable from it) steps down at once, before
 * its lease can expire and someone else is elected, so two never lead for long. `elected` failing
 * (the connection was refused) gives the lease back for the next try.
 */
export interface LeadershipHandlers {
  elected(): Promise<void>;
  deposed(): Promise<void>;
}

export interface Leadership {
  /** Starts trying; resolves once the first try is done (elected or not). */
  start(handlers: LeadershipHandlers): Promise<void>;
  isLeader(): boolean;
  /** Stops trying; a leader steps down (deposed runs) and frees the lease for the others at once. */
  stop(): Promise<void>;
}

export function createLeadership(opts: { leases: Leases; name: string; failoverMs: number; clock: Clock; log: Logger }): Leadership {
  const { leases, name, clock, log } = opts;
  const leaseMs = Math.max(1_000, Math.floor(opts.failoverMs * 0.6));
  const everyMs = Math.max(200, Math.floor(opts.failoverMs / 5));
  let handlers: LeadershipHandlers | undefined;
  let leader = false;
  let stopped = false;
  let cancel: (() => void) | undefined;
  let busy: Promise<void> = Promise.resolve();

  async function stepDown(why: string): Promise<void> {
    if (!leader) return;
    leader = false;
    log.warn({ lease: name, why }, 'cluster: stepping down');
    await handlers?.deposed().catch((err: Error) => log.error({ err: err.message, lease: name }, 'cluster: stepping down failed'));
  }

  async function round(): Promise<void> {
    if (stopped || !handlers) return;
    if (leader) {
      const kept = await leases.renew(name, leaseMs).catch(() => false);
      if (!kept) await stepDown('could not renew the lease');
      return;
    }
    const got = await leases.acquire(name, leaseMs).catch((err: Error) => {
      log.warn({ err: err.message, lease: name }, 'cluster: could not reach the database to try for the lease');
      return { acquired: false as const };
    });
    if (!got.acquired || stopped) return;
    leader = true;
    log.info({ lease: name, takenOver: got.takenOver }, 'cluster: this instance now holds the lease');
    // Connecting may take longer than the lease lives: renewals go on meanwhile.
    void handlers.elected().catch(async (err: Error) => {
      if (!leader) return;
      leader = false;
      log.error({ err: err.message, lease: name }, 'cluster: could not take up the lease; giving it back');
      await leases.release(name).catch(() => undefined);
    });
  }

  function schedule(): void {
    cancel = clock.setTimer(() => {
      busy = round().finally(() => {
        if (!stopped) schedule();
      });
    }, everyMs);
  }

  return {
    async start(h) {
      handlers = h;
      busy = round().finally(() => {
        if (!stopped) schedule();
      });
      await busy;
    },
    isLeader: () => leader,
    async stop() {
      stopped = true;
      cancel?.();
      await busy.catch(() => undefined);
      if (leader) {
        await stepDown('shutting down');
        await leases.release(name).catch(() => undefined);
      }
    },
  };
}
