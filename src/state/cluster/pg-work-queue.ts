import { sql } from 'kysely';
import type pg from 'pg';
import type { Logger } from '../../basics/log.js';
import type { Clock } from '../../basics/clock.js';
import type { OpenedDatabase } from '../store/database.js';
import { createWorkLoop, rowOf } from './work-loop.js';
import type { WorkQueue } from './work-queue.js';

/**
 * The WorkQueue of instances sharing one PostgreSQL database, claiming the way pg-boss does: the
 * claim's inner SELECT takes the row with FOR UPDATE SKIP LOCKED, so instances looking at once
 * each get a different row and never wait on each other (work-loop.ts has the statement).
 *
 * - A row added by any instance announces itself with NOTIFY in the transaction that wrote it, so
 *   the others hear of it the moment it commits; a poll every `pollMs` finds what a lost
 *   notification missed and rows whose runner died (its lease ran out: `leaseMs`).
 * - While a job runs its lease is renewed every third of its life; an instance that stalled past
 *   it finds the claim gone and stops the job (another one has it now).
 * - `/hermes stop` reaching an instance that does not run the lane's job is passed on with NOTIFY.
 */
export interface PgWorkQueueOptions {
  database: OpenedDatabase;
  /** Used for the LISTEN connection (a pooled connection cannot stay subscribed). */
  url: string;
  instanceId: string;
  log: Logger;
  clock: Clock;
  maxConcurrent: () => number;
  onRaise?(fn: () => void): void;
  /** Default 5 s. */
  leaseMs?: number;
  /** Default 1 s. */
  pollMs?: number;
  /** Default 150 ms: see work-loop.ts. Posts accepted by two instances within it still run in platform order. */
  settleMs?: number;
}

const CHANNEL = 'hermes_work';
const STOP_CHANNEL = 'hermes_stop';
const LISTEN_RETRY_MS = 2_000;

export function createPgWorkQueue<J>(opts: PgWorkQueueOptions): WorkQueue<J> {
  const { log, clock } = opts;
  const { db } = opts.database;
  const leaseMs = opts.leaseMs ?? 5_000;
  const loop = createWorkLoop<J>({
    database: opts.database,
    instanceId: opts.instanceId,
    clock,
    log,
    maxConcurrent: opts.maxConcurrent,
    leaseMs,
    settleMs: opts.settleMs ?? 150,
    pollMs: opts.pollMs ?? 1_000,
    heartbeat: true,
  });
  opts.onRaise?.(() => loop.pump());
  let running = false;
  let onStop: ((lane: string) => void) | undefined;
  let listener: pg.Client | undefined;
  let cancelListenRetry: (() => void) | undefined;

  async function listen(): Promise<void> {
    // Imported here, not at the top, so a bot on SQLite never loads the PostgreSQL driver.
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
      if (n.channel === CHANNEL) loop.wakeSoon();
      else if (n.channel === STOP_CHANNEL && n.payload && loop.holds(n.payload)) onStop?.(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}; LISTEN ${STOP_CHANNEL}`);
    } catch (err) {
      retry((err as Error).message);
    }
  }

  const queue: WorkQueue<J> = {
    async addIn(tx, item) {
      const r = await tx.insertInto('hermes_work').values(rowOf(item, clock.now())).onConflict((c) => c.column('id').doNothing()).executeTakeFirst();
      const added = Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
      // Delivered when the transaction commits, to every instance (this one included).
      if (added) await sql`select pg_notify(${CHANNEL}, ${item.lane})`.execute(tx);
      return added;
    },
    wake() {
      loop.wakeSoon();
    },
    async add(item) {
      const added = await queue.addIn(db, item);
      queue.wake(item.lane);
      return added;
    },
    async start(run, stop) {
      if (running) return;
      running = true;
      onStop = stop;
      await listen();
      loop.start(run);
    },
    async stopElsewhere(lane) {
      if (loop.holds(lane)) return false;
      const held = await db
        .selectFrom('hermes_work')
        .select('id')
        .where('lane', '=', lane)
        .where('claimed_until', '>=', clock.now())
        .limit(1)
        .executeTakeFirst();
      if (!held) return false;
      await sql`select pg_notify(${STOP_CHANNEL}, ${lane})`.execute(db);
      return true;
    },
    // Other instances add rows: only the table knows.
    mayHaveWaiting: () => true,
    removedWaiting: () => undefined,
    active: () => loop.active(),
    idle: () => loop.idle(),
    async close() {
      running = false;
      loop.close();
      cancelListenRetry?.();
      const client = listener;
      listener = undefined;
      if (client) {
        client.removeAllListeners();
        client.on('error', () => undefined);
        await client.end().catch(() => undefined);
      }
    },
  };
  return queue;
}
