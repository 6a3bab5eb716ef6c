import type pg from 'pg';
import type { Logger } from '../../basics/log.js';
import type { Clock } from '../../basics/clock.js';
import { createLeases, type Leases } from './lease.js';

/**
 * Session work shared by every instance on one PostgreSQL database.
 *
 * - A job accepted by any instance is a row in `hermes_inbox` before the platform is told it
 *   arrived; its `seq` (one sequence for the whole database) is its place in line.
 * - One instance at a time works on a session: the holder of the lease `session:<key>`. It runs
 *   that session's rows in `seq` order, one at a time, deleting each when its job has ended, and
 *   renews the lease every third of its life while it holds it.
 * - An instance learns of new rows from its own accept (at once), from the other instances
 *   through LISTEN/NOTIFY (within milliseconds), and from a short poll that also finds sessions
 *   whose holder died: its lease expires after `leaseMs`, and the next poll takes it over.
 * - A job is marked started before it runs. One found started is one an instance began and never
 *   finished (it died, stalled past its lease, or shut down mid-turn): the job is told so
 *   (`startedBefore`), since only it knows how to tell what already happened (the gateway checks
 *   the session history).
 *
 * Every loop is bounded: a holder runs at most MAX_JOBS_PER_HOLD jobs before it lets the lease go
 * (and tries again, behind anyone waiting), a poll looks at POLL_SESSIONS sessions at most.
 */
export interface WorkContext {
  /** An instance started this job before and did not finish it. */
  startedBefore: boolean;
  /** Aborted when this instance lost the lease (it stalled past the expiry) or is closing. */
  signal: AbortSignal;
}

export interface PgWorkQueueOptions<J> {
  pool: pg.Pool;
  /** Used for the LISTEN connection (a pooled connection cannot stay subscribed). */
  url: string;
  instanceId: string;
  log: Logger;
  clock: Clock;
  run(sessionKey: string, job: J, ctx: WorkContext): Promise<void>;
  /** Sessions worked on at once by this instance (asked each time, so it may adapt to load). */
  maxConcurrent: number | (() => number);
  /** Another instance asked to stop the turn running in a session (`/hermes stop` reached it). */
  onStop?(sessionKey: string): void;
  /** Default 5 s. */
  leaseMs?: number;
  /** Default 1 s. */
  pollMs?: number;
}

export interface PgWorkQueue<J> {
  /** Stores the job durably (ignored when a job with this id is already queued) and wakes a worker. */
  submit(sessionKey: string, id: string, job: J): Promise<void>;
  start(): Promise<void>;
  /**
   * Asks whichever instance works on the session to stop its turn. True when another instance
   * holds the session right now (so there was a turn elsewhere to stop).
   */
  stopElsewhere(sessionKey: string): Promise<boolean>;
  /** Sessions this instance is working on right now. */
  active(): number;
  /** Resolves when this instance works on no session. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'hermes_inbox';
const STOP_CHANNEL = 'hermes_stop';
const MAX_JOBS_PER_HOLD = 50;
const POLL_SESSIONS = 50;
const LISTEN_RETRY_MS = 2_000;

export function createPgWorkQueue<J>(opts: PgWorkQueueOptions<J>): PgWorkQueue<J> {
  const { pool, log, clock } = opts;
  const leaseMs = opts.leaseMs ?? 5_000;
  const pollMs = opts.pollMs ?? 1_000;
  const leases: Leases = createLeases(pool, opts.instanceId);
  const leaseName = (key: string) => `session:${key}`;

  /** Sessions held here, with the controller that stops their work. */
  const holding = new Map<string, AbortController>();
  /** Sessions with work seen while every slot was busy. Bounded by the poll size per round. */
  const waiting = new Set<string>();
  /** Keys poked while their worker ran: it looks again before letting go. */
  const pokedWhileHeld = new Set<string>();
  const acquiring = new Set<string>();
  let idleWaiters: Array<() => void> = [];
  let running = false;
  let cancelPoll: (() => void) | undefined;
  let listener: pg.Client | undefined;
  let cancelListenRetry: (() => void) | undefined;

  function poke(key: string): void {
    if (!running) return;
    if (holding.has(key)) {
      pokedWhileHeld.add(key);
      return;
    }
    if (acquiring.has(key)) return;
    const max = typeof opts.maxConcurrent === 'number' ? opts.maxConcurrent : opts.maxConcurrent();
    if (holding.size + acquiring.size >= max) {
      if (waiting.size < max * 4 + POLL_SESSIONS) waiting.add(key);
      return;
    }
    acquiring.add(key);
    void leases
      .acquire(leaseName(key), leaseMs)
      .then((got) => {
        acquiring.delete(key);
        if (!got.acquired || !running) {
          if (got.acquired) void leases.release(leaseName(key)).catch(() => undefined);
          return;
        }
        const controller = new AbortController();
        holding.set(key, controller);
        if (got.takenOver) log.warn({ session: key }, 'cluster: took over a session whose holder stopped renewing its lease');
        void work(key, controller).finally(() => {
          holding.delete(key);
          afterSlotFreed();
        });
      })
      .catch((err: Error) => {
        acquiring.delete(key);
        log.warn({ err: err.message, session: key }, 'cluster: could not take a session lease; the poll retries');
      });
  }

  function afterSlotFreed(): void {
    const next = waiting.values().next();
    if (!next.done) {
      waiting.delete(next.value);
      poke(next.value);
    }
    if (holding.size === 0 && acquiring.size === 0) {
      const w = idleWaiters;
      idleWaiters = [];
      w.forEach((f) => f());
    }
  }

  async function work(key: string, controller: AbortController): Promise<void> {
    const heartbeat = setInterval(() => {
      leases.renew(leaseName(key), leaseMs).then(
        (ok) => {
          if (ok || controller.signal.aborted) return;
          log.error({ session: key }, 'cluster: lost a session lease while working on it (this instance stalled); stopping its work here');
          controller.abort();
        },
        (err: Error) => log.warn({ err: err.message, session: key }, 'cluster: renewing a session lease failed; retrying'),
      );
    }, Math.max(200, Math.floor(leaseMs / 3)));
    let more = false;
    try {
      for (let n = 0; n < MAX_JOBS_PER_HOLD && running && !controller.signal.aborted; n++) {
        pokedWhileHeld.delete(key);
        const res = await pool.query<{ seq: string; job: string; started: boolean }>(
          'SELECT seq, job, started_at IS NOT NULL AS started FROM hermes_inbox WHERE session_key = $1 ORDER BY seq LIMIT 1',
          [key],
        );
        const row = res.rows[0];
        if (!row) break;
        await pool.query('UPDATE hermes_inbox SET started_at = now() WHERE seq = $1', [row.seq]);
        try {
          await opts.run(key, JSON.parse(row.job) as J, { startedBefore: row.started, signal: controller.signal });
        } catch (err) {
          // The job answers the user itself; a job that throws anyway is logged and dropped
          // rather than retried forever in front of the session's later messages.
          log.error({ err: (err as Error).message, session: key }, 'cluster: a session job failed');
        }
        // The lease is gone, or this instance is shutting down (its turn was stopped): the row
        // stays, and whoever takes the session next finds it started.
        if (controller.signal.aborted || !running) break;
        await pool.query('DELETE FROM hermes_inbox WHERE seq = $1', [row.seq]);
        more = n === MAX_JOBS_PER_HOLD - 1;
      }
    } catch (err) {
      log.warn({ err: (err as Error).message, session: key }, 'cluster: reading the session inbox failed; the poll retries');
    } finally {
      clearInterval(heartbeat);
      if (!controller.signal.aborted) await leases.release(leaseName(key)).catch(() => undefined);
    }
    // A job accepted elsewhere between our last look and the release may have found the lease
    // still held and been left for us: look once more now that it is free.
    if (running && (more || pokedWhileHeld.has(key) || (await hasWork(key)))) {
      pokedWhileHeld.delete(key);
      setImmediate(() => poke(key));
    }
  }

  async function hasWork(key: string): Promise<boolean> {
    try {
      const res = await pool.query('SELECT 1 FROM hermes_inbox WHERE session_key = $1 LIMIT 1', [key]);
      return (res.rowCount ?? 0) > 0;
    } catch {
      return false; // the poll looks again
    }
  }

  async function poll(): Promise<void> {
    try {
      const res = await pool.query<{ session_key: string }>(
        `SELECT DISTINCT i.session_key FROM hermes_inbox i
         LEFT JOIN hermes_lease l ON l.name = 'session:' || i.session_key
         WHERE l.name IS NULL OR l.expires_at < now()
         LIMIT ${POLL_SESSIONS}`,
      );
      for (const r of res.rows) poke(r.session_key);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'cluster: polling the inbox failed');
    }
  }

  function schedulePoll(): void {
    cancelPoll = clock.setTimer(() => {
      if (!running) return;
      void poll().finally(() => {
        if (running) schedulePoll();
      });
    }, pollMs);
  }

  async function listen(): Promise<void> {
    // Imported here, not at the top, so a bot on SQLite never loads the PostgreSQL driver (the
    // gateway imports this file either way); by now the PostgreSQL store has loaded it.
    const { default: driver } = await import('pg');
    if (!running) return;
    const client = new driver.Client({ connectionString: opts.url, connectionTimeoutMillis: 10_000, keepAlive: true });
    const retry = (why: string) => {
      if (listener !== client) return;
      listener = undefined;
      client.removeAllListeners();
      void client.end().catch(() => undefined);
      if (!running) return;
      log.warn({ err: why }, 'cluster: the LISTEN connection failed; polling until it is back');
      cancelListenRetry = clock.setTimer(() => void listen().catch(() => undefined), LISTEN_RETRY_MS);
    };
    listener = client;
    client.on('error', (err) => retry(err.message));
    client.on('end', () => retry('connection ended'));
    client.on('notification', (n) => {
      if (n.channel === CHANNEL && n.payload) poke(n.payload);
      else if (n.channel === STOP_CHANNEL && n.payload && holding.has(n.payload)) opts.onStop?.(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}; LISTEN ${STOP_CHANNEL}`);
    } catch (err) {
      retry((err as Error).message);
    }
  }

  return {
    async submit(sessionKey, id, job) {
      await pool.query(
        `WITH added AS (
           INSERT INTO hermes_inbox (id, session_key, job, accepted_by) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING RETURNING seq
         ) SELECT pg_notify('${CHANNEL}', $2) FROM added`,
        [id, sessionKey, JSON.stringify(job), opts.instanceId],
      );
      poke(sessionKey);
    },

    async start() {
      if (running) return;
      running = true;
      await listen();
      schedulePoll();
      await poll();
    },

    async stopElsewhere(sessionKey) {
      if (holding.has(sessionKey)) return false;
      const holder = await leases.holder(leaseName(sessionKey));
      if (holder === undefined) return false;
      await pool.query('SELECT pg_notify($1, $2)', [STOP_CHANNEL, sessionKey]);
      return true;
    },

    active: () => holding.size + acquiring.size,

    idle: () => (holding.size === 0 && acquiring.size === 0 ? Promise.resolve() : new Promise((r) => idleWaiters.push(r))),

    async close() {
      running = false;
      cancelPoll?.();
      cancelListenRetry?.();
      const client = listener;
      listener = undefined;
      if (client) {
        client.removeAllListeners();
        client.on('error', () => undefined);
        await client.end().catch(() => undefined);
      }
      waiting.clear();
    },
  };
}
