import { sql } from 'kysely';
import type pg from 'pg';
import type { Logger } from '../../basics/log.js';
import type { Clock } from '../../basics/clock.js';
import type { OpenedDatabase } from '../store/database.js';
import { createWorkLoop, rowOf } from './work-loop.js';
import type { WorkQueue } from './work-queue.js';
import type { Invalidations } from './invalidations.js';

/**
 * The WorkQueue of instances sharing one PostgreSQL database, claiming the way pg-boss does: the
 * claim's inner SELECT takes the row with FOR UPDATE SKIP LOCKED, so instances looking at once
 * each get a different row and never wait on each other (work-loop.ts has the statement).
 *
 * - A row added by any instance announces itself with NOTIFY in the statement that writes it (so
 *   in the transaction that wrote it): the others hear of it the moment it commits. A poll finds
 *   rows whose runner died (its lease ran out: `leaseMs`) and, while the LISTEN connection is
 *   down, what the missed notifications would have said.
 * - While a job runs its lease is renewed every third of its life; an instance that stalled past
 *   it finds the claim gone and stops the job (another one has it now).
 * - `/hermes stop` reaching an instance that does not run the lane's job is passed on with NOTIFY.
 * - Settling (`settleMs`, see work-loop.ts) is only needed against another instance's accept still
 *   in flight, so it applies only while another instance is live. Instances say so on the same
 *   channel: a greeting when they start listening (answered at once by every live instance), then
 *   a notification at least every `presenceMs` (an add counts), and a goodbye when they close. An
 *   instance not heard for three of those periods counts as gone. Until its own greeting could
 *   have been answered (a quarter of `presenceMs`) and whenever its LISTEN connection is down, an
 *   instance settles anyway.
 * - Every add names its lane, so while a lane's row runs here this instance knows whether rows of
 *   that lane may be waiting behind it (the claim also counts those already there): a turn looks
 *   for messages to steer in only when one may have arrived.
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
  /** Default 5 s while listening (a lost lease is found within about two lease lengths); 1 s while the LISTEN connection is down. */
  pollMs?: number;
  /** Default 150 ms: see work-loop.ts. Posts accepted by two instances within it still run in platform order. */
  settleMs?: number;
  /** Default 2 s: how often a live instance lets the others hear of it at the least. */
  presenceMs?: number;
}

/** The queue as instances of one database see it; `peers` for tests and diagnostics. */
export interface PgWorkQueue<J> extends WorkQueue<J> {
  /** Other instances heard from within three presence periods. */
  peers(): number;
  /** Cache invalidations between instances, on the same channel. */
  invalidations: Invalidations;
}

const CHANNEL = 'hermes_work';
const STOP_CHANNEL = 'hermes_stop';
const LISTEN_RETRY_MS = 2_000;
/** Longest wait between polls while the LISTEN connection is down (nothing else wakes the loop). */
const POLL_UNHEARD_MS = 1_000;

/** What travels on CHANNEL: an added row's lane, or an instance saying it is there. */
type Said = { t: 'add'; i: string; l: string } | { t: 'hi' | 'here' | 'bye'; i: string } | { t: 'inv'; i: string; c: string; k: string };

function parseSaid(payload: string | undefined): Said | undefined {
  try {
    const v = JSON.parse(payload ?? '') as Partial<Said> | null;
    if (!v || typeof v.i !== 'string') return undefined;
    if (v.t === 'add' && typeof (v as { l?: unknown }).l === 'string') return v as Said;
    if (v.t === 'hi' || v.t === 'here' || v.t === 'bye') return v as Said;
    if (v.t === 'inv' && typeof (v as { c?: unknown }).c === 'string' && typeof (v as { k?: unknown }).k === 'string') return v as Said;
  } catch {
    // Not ours (or an older version's bare lane): handled by the caller.
  }
  return undefined;
}

export function createPgWorkQueue<J>(opts: PgWorkQueueOptions): PgWorkQueue<J> {
  const { log, clock } = opts;
  const { db } = opts.database;
  const self = opts.instanceId;
  const leaseMs = opts.leaseMs ?? 5_000;
  const settleMs = opts.settleMs ?? 150;
  const pollMs = opts.pollMs ?? 5_000;
  const presenceMs = opts.presenceMs ?? 2_000;
  const goneAfterMs = 3 * presenceMs;
  /** Live instances answer a greeting at once; a busy one is heard at its next heartbeat anyway. */
  const answeredWithinMs = presenceMs / 4;
  /** Other instances by id → when last heard. */
  const peers = new Map<string, number>();
  /** Listening since (undefined: the LISTEN connection is not up). */
  let listeningSince: number | undefined;
  /** When this instance last said something on CHANNEL (an add's notification counts). */
  let saidAt = 0;
  let cancelPresence: (() => void) | undefined;
  const livePeers = () => {
    const now = clock.now();
    for (const [id, at] of peers) if (now - at > goneAfterMs) peers.delete(id);
    return peers.size;
  };
  const settle = () => {
    if (settleMs <= 0) return 0;
    // Deaf, or not yet answered: another instance may be accepting.
    if (listeningSince === undefined || clock.now() - listeningSince < answeredWithinMs) return settleMs;
    return livePeers() > 0 ? settleMs : 0;
  };
  /**
   * Unclaimed rows behind each lane held here, as far as the claim's count and the adds heard
   * since tell; lanes named by adds heard while the current claim statement runs (its count may or
   * may not include them: counted twice costs one look too many, never a missed message).
   */
  const waiting = new Map<string, number>();
  const heardDuringClaim = new Set<string>();
  let anyHeardDuringClaim = false;
  const loop = createWorkLoop<J>({
    database: opts.database,
    instanceId: self,
    clock,
    log,
    maxConcurrent: opts.maxConcurrent,
    leaseMs,
    settleMs: settle,
    pollMs: () => (listeningSince === undefined ? Math.min(pollMs, POLL_UNHEARD_MS) : pollMs),
    heartbeat: true,
    // Renewals go over the LISTEN connection while it is up: on the pool they waited behind every
    // queued statement (seconds at 500 sessions on two instances), long enough for leases to run
    // out under turns still running.
    renew(ids, until) {
      const client = listener;
      if (!client || listeningSince === undefined) return undefined;
      return client
        .query<{ id: string }>('update hermes_work set claimed_until = $1 where claimed_by = $2 and id = any($3::text[]) returning id', [until, self, ids])
        .then((r) => r.rows.map((row) => row.id));
    },
    claiming() {
      heardDuringClaim.clear();
      anyHeardDuringClaim = false;
    },
    claimed(lane, n) {
      waiting.set(lane, (n ?? 1) + (heardDuringClaim.has(lane) || anyHeardDuringClaim ? 1 : 0));
    },
    released(lane) {
      waiting.delete(lane);
    },
  });
  opts.onRaise?.(() => loop.pump());
  let running = false;
  let onStop: ((lane: string) => void) | undefined;
  let listener: pg.Client | undefined;
  let cancelListenRetry: (() => void) | undefined;

  function heardAdd(lane: string | undefined): void {
    if (lane === undefined) {
      anyHeardDuringClaim = true;
      for (const l of waiting.keys()) waiting.set(l, (waiting.get(l) ?? 0) + 1);
    } else {
      heardDuringClaim.add(lane);
      const n = waiting.get(lane);
      if (n !== undefined) waiting.set(lane, n + 1);
    }
    loop.wakeSoon();
  }

  // Cache invalidations (invalidations.ts): subscribers per topic, and a generation counter.
  const subscribers = new Map<string, Array<(key: string | undefined) => void>>();
  let generation = 0;
  const dropAll = () => {
    generation++;
    for (const fns of subscribers.values()) for (const fn of fns) fn(undefined);
  };

  function heard(payload: string | undefined): void {
    const said = parseSaid(payload);
    if (said?.t === 'inv') {
      generation++;
      for (const fn of subscribers.get(said.c) ?? []) fn(said.k);
      return;
    }
    if (!said) {
      // An older instance's bare lane: someone else is accepting, and which lane is all it says.
      peers.set('(unnamed)', clock.now());
      return heardAdd(payload);
    }
    if (said.i !== self) {
      if (said.t === 'bye') peers.delete(said.i);
      else peers.set(said.i, clock.now());
      if (said.t === 'hi') say('here');
    }
    if (said.t === 'add') heardAdd(said.l);
  }

  function say(t: 'hi' | 'here' | 'bye'): void {
    const client = listener;
    if (!client || listeningSince === undefined) return;
    saidAt = clock.now();
    client.query('select pg_notify($1, $2)', [CHANNEL, JSON.stringify({ t, i: self } satisfies Said)]).catch(() => undefined);
  }

  function presence(): void {
    cancelPresence = clock.setTimer(() => {
      if (!running) return;
      if (clock.now() - saidAt >= presenceMs * 0.9) say('here');
      presence();
    }, presenceMs);
  }

  async function listen(): Promise<void> {
    // Imported here, not at the top, so a bot on SQLite never loads the PostgreSQL driver.
    const { default: driver } = await import('pg');
    if (!running) return;
    // Statements on it (renewals, presence) time out after a lease: later than that they are too late anyway.
    const client = new driver.Client({ connectionString: opts.url, connectionTimeoutMillis: 10_000, keepAlive: true, query_timeout: leaseMs });
    const retry = (why: string) => {
      if (listener !== client) return;
      listener = undefined;
      listeningSince = undefined;
      dropAll();
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
      if (n.channel === CHANNEL) heard(n.payload);
      else if (n.channel === STOP_CHANNEL && n.payload && loop.holds(n.payload)) onStop?.(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}; LISTEN ${STOP_CHANNEL}`);
      if (listener !== client) return;
      // Adds made while deaf were not heard: until the next claim, any lane may have rows waiting.
      for (const l of waiting.keys()) waiting.set(l, (waiting.get(l) ?? 0) + 1);
      listeningSince = clock.now();
      dropAll();
      say('hi');
      loop.pump();
    } catch (err) {
      retry((err as Error).message);
    }
  }

  const queue: PgWorkQueue<J> = {
    async addIn(tx, item) {
      const r = rowOf(item, clock.now());
      const said: Said = { t: 'add', i: self, l: item.lane };
      // One statement: the notification is sent only if the row was inserted, and delivered when
      // the transaction commits, to every instance (this one included).
      const { rows } = await sql<{ n: unknown }>`
        with ins as (
          insert into hermes_work (id, kind, lane, order_key, due_at, payload, claimed_by, claimed_until, attempts, created_at)
          values (${r.id}, ${r.kind}, ${r.lane}, ${r.order_key}, ${r.due_at}, ${r.payload}, null, null, 0, ${r.created_at})
          on conflict (id) do nothing
          returning id)
        select pg_notify(${CHANNEL}, ${JSON.stringify(said)}) as n from ins`.execute(tx);
      if (rows.length > 0) saidAt = clock.now();
      return rows.length > 0;
    },
    async addMarked(mark, item, receipt) {
      const r = rowOf(item, clock.now());
      const said: Said = { t: 'add', i: self, l: item.lane };
      // One statement, atomic as a transaction: the row (and its notification) only with a new mark;
      // the receipt settled either way (a data-modifying WITH runs whether or not it is read).
      const settled = receipt
        ? sql`settled as (
          update hermes_receipt set done_at = ${receipt.doneAt}::double precision
          where platform = ${receipt.platform}::text and id = ${receipt.id}::text and done_at is null),`
        : sql``;
      const { rows } = await sql<{ marked: string | number; added: string | number }>`
        with ${settled} mark as (
          insert into hermes_inbound (platform, id, outcome, accepted_at)
          values (${mark.platform}, ${mark.id}, 'queued', ${mark.acceptedAt})
          on conflict (platform, id) do nothing
          returning 1),
        ins as (
          insert into hermes_work (id, kind, lane, order_key, due_at, payload, claimed_by, claimed_until, attempts, created_at)
          select ${r.id}::text, ${r.kind}::text, ${r.lane}::text, ${r.order_key}::text, ${r.due_at}::double precision, ${r.payload}::text, null, null, 0, ${r.created_at}::double precision
          where exists (select 1 from mark)
          on conflict (id) do nothing
          returning id)
        select (select count(*) from mark) as marked,
          (select count(*) from (select pg_notify(${CHANNEL}, ${JSON.stringify(said)}) from ins) sent) as added`.execute(db);
      if (Number(rows[0]?.added ?? 0) > 0) saidAt = clock.now();
      return Number(rows[0]?.marked ?? 0) > 0;
    },
    wake() {
      // The add's own notification wakes this instance too (one look, not two); deaf, wake now.
      if (listeningSince === undefined) loop.wakeSoon();
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
      presence();
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
    // Deaf, or a lane not held here: only the table knows.
    mayHaveWaiting: (lane) => listeningSince === undefined || (waiting.get(lane) ?? 1) > 0,
    removedWaiting(lane, n) {
      const left = waiting.get(lane);
      if (left !== undefined) waiting.set(lane, Math.max(0, left - n));
    },
    peers: livePeers,
    invalidations: {
      live: () => listeningSince !== undefined,
      generation: () => generation,
      on(topic, fn) {
        subscribers.set(topic, [...(subscribers.get(topic) ?? []), fn]);
      },
      async sendIn(tx, topic, key) {
        const said: Said = { t: 'inv', i: self, c: topic, k: key };
        await sql`select pg_notify(${CHANNEL}, ${JSON.stringify(said)})`.execute(tx);
      },
      notice: (topic, key) => ({ channel: CHANNEL, payload: JSON.stringify({ t: 'inv', i: self, c: topic, k: key } satisfies Said) }),
    },
    active: () => loop.active(),
    idle: () => loop.idle(),
    async close() {
      if (running) say('bye');
      running = false;
      loop.close();
      cancelListenRetry?.();
      cancelPresence?.();
      const client = listener;
      listener = undefined;
      listeningSince = undefined;
      dropAll();
      if (client) {
        client.removeAllListeners();
        client.on('error', () => undefined);
        await client.end().catch(() => undefined);
      }
    },
  };
  return queue;
}
