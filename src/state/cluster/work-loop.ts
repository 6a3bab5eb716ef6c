import { sql } from 'kysely';
import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { OpenedDatabase } from '../store/database.js';
import type { WorkItem, WorkKind, WorkQueue, WorkRunner } from './work-queue.js';

/**
 * The worker loop both WorkQueue implementations share: claim the next runnable row with one
 * statement, run it, delete it, look again. A row is runnable when it is due, settled, not held
 * by a live lease, and first in its lane (no other row of the lane is earlier or held). The claim
 * writes the lease and counts the attempt in the same statement, so two workers (two instances on
 * PostgreSQL) can never both take a row: there the inner SELECT locks with FOR UPDATE SKIP LOCKED,
 * on SQLite the one connection runs one statement at a time anyway.
 */
export interface WorkLoopOptions {
  database: OpenedDatabase;
  instanceId: string;
  clock: Clock;
  log: Logger;
  /** Rows run at once by this instance (asked each time, so it may follow the load governor). */
  maxConcurrent: () => number;
  /** How long a claim holds without renewal; renewed every third of it while the job runs. */
  leaseMs: number;
  /**
   * How long a new row waits before it may run, so a post written a moment earlier on the
   * platform but accepted a moment later (another instance, a slower listener) still goes first.
   * Asked at each look: on PostgreSQL it is 0 while no other instance is live (pg-work-queue.ts).
   */
  settleMs: number | (() => number);
  /** Looks for work now and then besides the wake-ups (expired leases of dead instances); 0 = never. Asked each time. */
  pollMs: number | (() => number);
  /** Renews leases while jobs run (several instances; one statement for all): a lone SQLite instance's claims cannot be taken. */
  heartbeat: boolean;
  /**
   * Every row enters through this process's queue, which calls `added` for it (a lone instance on
   * its own SQLite file): the loop then knows when the next waiting row comes due without asking
   * the table after every claim. Without it (PostgreSQL, other instances add rows) it asks.
   */
  seesEveryAdd?: boolean;
  /**
   * A lone instance that counts the rows it added and claimed: true when none can be waiting
   * unclaimed, so a wake-up (a job's end, the governor's raise) skips the claim that would find
   * nothing. The sleep timer's look claims anyway: the bounded fallback (MAX_SLEEP_MS) should
   * the count ever be low.
   */
  noneUnclaimed?(): boolean;
  /**
   * Renews the claims on `ids` held by this instance until `until` and answers the ids it found, on
   * a connection of its own (PostgreSQL: the LISTEN connection, so a renewal does not queue behind
   * the pool's statements); undefined when it has none now (the pool is used).
   */
  renew?(ids: string[], until: number): Promise<string[]> | undefined;
  /** Told before each claim statement is sent (claims run one at a time). */
  claiming?(): void;
  /**
   * Told of each row as it is claimed here; on PostgreSQL with how many other rows of its lane were
   * waiting unclaimed when the claim looked.
   */
  claimed?(lane: string, waiting?: number): void;
  /** Told when a row claimed here has ended (deleted, or left for the next claim). */
  released?(lane: string): void;
}

interface ClaimedRow {
  id: string;
  kind: string;
  lane: string;
  payload: string;
  attempts: number;
  /** PostgreSQL: other unclaimed rows of the lane when the claim looked. */
  waiting?: number | string;
}

/** Longest wait for the next due row before looking again anyway (a clock jump, a missed wake). */
const MAX_SLEEP_MS = 60_000;

export interface WorkLoop<J> extends Pick<WorkQueue<J>, 'active' | 'idle'> {
  start(run: WorkRunner<J>): void;
  /** A row due at `dueAt` was written (seesEveryAdd): the next wake-up is no later than that. */
  added(dueAt: number): void;
  /** Looks for runnable rows now (a wake-up). */
  pump(): void;
  /**
   * A lone instance (seesEveryAdd) about to write row `id` of `lane`, which no other row of the
   * lane waits before (the caller knows): when there is room now, nothing of the lane runs here and
   * rows need no settling, the row is reserved, to be written already claimed with the lease
   * returned, and started with runReserved once written, with no claim statement. Undefined: write it
   * unclaimed as usual. A reserved row counts as running until runReserved or unreserve.
   */
  reserve(id: string, lane: string): { claimedBy: string; claimedUntil: number } | undefined;
  /** The reserved row is written (committed) with attempts = 1: it runs now. */
  runReserved(row: { id: string; kind: string; lane: string; payload: string }): void;
  /** The reserved row was not written. */
  unreserve(id: string): void;
  /**
   * A row was just added (here or by another instance): it may run once it has settled, so look
   * then, not now (a look now finds it unsettled and only asks when to look again).
   */
  wakeSoon(): void;
  /** Aborts the rows of a lane running here; true if there was one. */
  abortLane(lane: string): boolean;
  holds(lane: string): boolean;
  close(): void;
}

export function rowOf<J>(item: WorkItem<J>, now: number) {
  return {
    id: item.id,
    kind: item.kind,
    lane: item.lane,
    order_key: item.order,
    due_at: item.dueAt ?? now,
    payload: JSON.stringify(item.job),
    claimed_by: null,
    claimed_until: null,
    attempts: 0,
    created_at: now,
  };
}

export function createWorkLoop<J>(opts: WorkLoopOptions): WorkLoop<J> {
  const { database, clock, log } = opts;
  const { db } = database;
  const held = new Map<string, { lane: string; controller: AbortController }>();
  let run: WorkRunner<J> | undefined;
  let running = false;
  let pumping = false;
  let again = false;
  let cancelSleep: (() => void) | undefined;
  let cancelPoll: (() => void) | undefined;
  /** The next pump was asked for by the sleep timer: it claims even when noneUnclaimed says there is nothing. */
  let timerLook = false;
  /** When the sleep timer fires, and the earliest settle time of rows announced since the last look. */
  let timerAt: number | undefined;
  let soonAt: number | undefined;
  let idleWaiters: Array<() => void> = [];
  const pg = database.dialect === 'postgres';
  const lock = pg ? sql`for update skip locked` : sql``;
  const settleMs = typeof opts.settleMs === 'function' ? opts.settleMs : () => opts.settleMs as number;
  const pollMs = typeof opts.pollMs === 'function' ? opts.pollMs : () => opts.pollMs as number;
  /** PostgreSQL: when the next waiting row comes due, as the last claim statement also reported. */
  let reportedNext: number | undefined;
  /**
   * PostgreSQL: rows whose job ended here, deleted by the next claim statement (the round trip
   * that frees their lane also claims what is next), or on their own when no claim follows.
   */
  let finished: string[] = [];

  async function deleteFinished(): Promise<void> {
    const ids = finished;
    finished = [];
    if (ids.length === 0) return;
    await db
      .deleteFrom('hermes_work')
      .where('id', 'in', ids)
      .where('claimed_by', '=', opts.instanceId)
      .execute()
      .catch((err: Error) => log.error({ err: err.message, ids }, 'work queue: could not remove finished jobs; they will be reported interrupted'));
  }
  /**
   * With seesEveryAdd: when the next waiting row comes due, as far as the adds this process saw
   * tell (exact once the table was asked since start; undefined = none waiting). A row deleted
   * meanwhile only costs a wake-up that claims nothing.
   */
  let known: { at: number | undefined } | undefined;
  /** Adds seen so far: an add while nextAt's query runs makes its answer stale (see nextWake). */
  let adds = 0;

  /**
   * Claims up to `room` runnable rows in one statement. At most one row per lane is runnable (the
   * first in its lane), so the rows are of different lanes; fewer than `room` means nothing else
   * is runnable now, and no further claim is needed to find that out.
   */
  async function claim(room: number, now: number): Promise<ClaimedRow[]> {
    const settle = settleMs();
    const done = pg ? finished : [];
    finished = [];
    // Rows deleted by this statement still show in its subqueries: they must not hold their lane.
    const notDone = (col: string) => (done.length > 0 ? sql`and ${sql.ref(col)} <> all(${done}::text[])` : sql``);
    // A row whose job still runs here is never claimed again here, even if its lease ran out (a
    // renewal late behind a busy pool or event loop): the same process ran the same turn twice and
    // answered it twice. Another instance may take it (this one stalled); its renewal then finds
    // the claim gone and stops the job here.
    const mine = pg ? [...held.keys()] : [];
    const notMine = mine.length > 0 ? sql`and w.id <> all(${mine}::text[])` : sql``;
    const update = sql`
      update hermes_work set claimed_by = ${opts.instanceId}, claimed_until = ${now + opts.leaseMs}, attempts = attempts + 1
      where id in (
        select w.id from hermes_work w
        where w.due_at <= ${now} and w.created_at <= ${now - settle}
          and (w.claimed_until is null or w.claimed_until < ${now}) ${notDone('w.id')} ${notMine}
          and not exists (
            select 1 from hermes_work e
            where e.lane = w.lane and e.id <> w.id ${notDone('e.id')}
              and ((e.claimed_until is not null and e.claimed_until >= ${now})
                or e.order_key < w.order_key or (e.order_key = w.order_key and e.id < w.id)))
        order by w.due_at, w.order_key, w.id
        limit ${room}
        ${lock}
      )`;
    if (!pg) {
      const { rows } = await sql<ClaimedRow>`${update} returning id, kind, lane, payload, attempts`.execute(db);
      return rows;
    }
    // PostgreSQL: one round trip also answers what nextAt would ask next (the subqueries see the
    // table as it was before the update; a row claimed here was due and settled, so it is not
    // counted as waiting for a due time either) and how many rows wait behind each claimed one
    // (mayHaveWaiting). One row with a null id when nothing was claimed.
    const remove = done.length > 0 ? sql`d as (delete from hermes_work where id = any(${done}::text[]) and claimed_by = ${opts.instanceId}),` : sql``;
    let rows: Array<ClaimedRow & { next_at: number | string | null }>;
    try {
      ({ rows } = await sql<ClaimedRow & { next_at: number | string | null }>`
        with ${remove} c as (${update} returning id, kind, lane, payload, attempts,
          (select count(*) from hermes_work e where e.lane = hermes_work.lane and e.id <> hermes_work.id and e.claimed_by is null) as waiting)
        select c.*, n.next_at from (${nextAtQuery(now, settle)}) n left join c on true`.execute(db));
    } catch (err) {
      finished = done.concat(finished);
      throw err;
    }
    const at = rows[0]?.next_at;
    reportedNext = at === null || at === undefined ? undefined : Number(at);
    return rows.filter((r) => r.id !== null);
  }

  function nextAtQuery(now: number, settle: number) {
    return sql`select min(case when due_at > created_at + ${settle} then due_at else created_at + ${settle} end) as next_at
      from hermes_work where claimed_until is null and (due_at > ${now} or created_at + ${settle} > ${now})`;
  }

  /**
   * When the next row that is waiting (not due or not settled yet) becomes runnable. Rows that
   * are due but wait behind an earlier one of their lane are not counted: the end of that one
   * looks again (counting them had the loop wake every millisecond while a lane was busy).
   * `now` is the time the last claim looked at: a row that came due since then is still waiting
   * (asking with a later time skipped it, and a reminder due in that gap slept a minute).
   */
  async function nextAt(now: number): Promise<number | undefined> {
    const { rows } = await sql<{ next_at: number | null }>`${nextAtQuery(now, settleMs())}`.execute(db);
    const at = rows[0]?.next_at;
    return at === null || at === undefined ? undefined : Number(at);
  }

  /** nextAt, from what this process saw added when that is enough; `claimedAt` as for nextAt. */
  async function nextWake(claimedAt: number, claimedNow: boolean): Promise<number | undefined> {
    // The claim statement that just ran reported it (PostgreSQL).
    if (pg && claimedNow) return reportedNext;
    if (opts.seesEveryAdd && known && (known.at === undefined || known.at > claimedAt)) return known.at;
    const before = adds;
    const at = await nextAt(claimedAt);
    if (!opts.seesEveryAdd) return at;
    // A row added while the query ran (a scheduled run writing its next due time) may be missing
    // from its answer: keeping that answer ("nothing waits") slept the loop a minute past the row.
    // Nothing is cached then, and the loop looks again at once.
    if (adds !== before) {
      known = undefined;
      return clock.now() + 1;
    }
    known = { at };
    return at;
  }

  function sleepUntil(at: number | undefined): void {
    cancelSleep?.();
    cancelSleep = undefined;
    timerAt = undefined;
    if (!running) return;
    // A row announced while this pump looked settles then, even if the look did not see it.
    if (soonAt !== undefined && (at === undefined || soonAt < at)) at = soonAt;
    const wait = at === undefined ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(1, at - clock.now()));
    timerAt = clock.now() + wait;
    cancelSleep = clock.setTimer(() => {
      timerAt = undefined;
      timerLook = true;
      pump();
    }, wait);
  }

  function wakeSoon(): void {
    if (!running) return;
    const settle = settleMs();
    if (settle <= 0) return pump();
    const at = clock.now() + settle;
    soonAt = soonAt === undefined ? at : Math.min(soonAt, at);
    // A pump under way sleeps until soonAt at the latest when it ends.
    if (pumping) return;
    if (timerAt === undefined || soonAt < timerAt) sleepUntil(soonAt);
  }

  /** Nothing held, nothing being looked for: what idle() waits for. */
  function settleIdle(): void {
    if (held.size > 0 || pumping) return;
    const w = idleWaiters;
    idleWaiters = [];
    w.forEach((f) => f());
  }

  function pump(): void {
    if (!running || !run) return settleIdle();
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    void (async () => {
      try {
        do {
          again = false;
          // Rows announced before this look are committed, so this look (or its nextAt) sees them.
          soonAt = undefined;
          let claimedAt = clock.now();
          let claimedNow = false;
          const look = timerLook || !opts.noneUnclaimed?.();
          timerLook = false;
          while (running && look) {
            const room = Math.max(1, opts.maxConcurrent()) - held.size;
            if (room <= 0) break;
            claimedAt = clock.now();
            opts.claiming?.();
            const claimed = await claim(room, claimedAt);
            claimedNow = true;
            const rows = await confirmLate(claimed, claimedAt);
            for (const row of rows.sort((a, b) => (a.id < b.id ? -1 : 1))) {
              opts.claimed?.(row.lane, row.waiting === undefined ? undefined : Number(row.waiting));
              launch(row);
            }
            if (claimed.length < room) break;
          }
          // No claim took them (no room): on their own.
          await deleteFinished();
          if (running && held.size < Math.max(1, opts.maxConcurrent())) {
            // Nothing unclaimed: nothing waits for a due time either.
            const at = look ? await nextWake(claimedAt, claimedNow) : undefined;
            // A wake-up that came while looking (a row added meanwhile) means: claim again first.
            if (again) continue;
            sleepUntil(at);
          }
        } while (again && running);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'work queue: looking for work failed; trying again shortly');
        sleepUntil(clock.now() + 1_000);
      } finally {
        if (!running && finished.length > 0) await deleteFinished();
        pumping = false;
        settleIdle();
      }
    })();
  }

  function launch(row: ClaimedRow): void {
    // A reserved row keeps the controller it was held with: a stop asked for meanwhile stands.
    const controller = held.get(row.id)?.controller ?? new AbortController();
    held.set(row.id, { lane: row.lane, controller });
    if (opts.heartbeat) startRenewing();
    void (async () => {
      let verdict: void | 'interrupted' = undefined;
      try {
        verdict = await run!(JSON.parse(row.payload) as J, {
          id: row.id,
          kind: row.kind as WorkKind,
          lane: row.lane,
          startedBefore: Number(row.attempts) > 1,
          signal: controller.signal,
        });
      } catch (err) {
        // The job answers the person itself; one that throws anyway is logged and dropped rather
        // than retried forever in front of its lane's later work.
        log.error({ err: (err as Error).message, lane: row.lane, id: row.id }, 'work queue: a job failed');
      }
      // Cut off (lost claim, shutting down): the row stays, and whoever claims it next is told.
      if (verdict !== 'interrupted' && pg && running) finished.push(row.id);
      else if (verdict !== 'interrupted') {
        await db
          .deleteFrom('hermes_work')
          .where('id', '=', row.id)
          .where('claimed_by', '=', opts.instanceId)
          .execute()
          .catch((err: Error) => log.error({ err: err.message, id: row.id }, 'work queue: could not remove a finished job; it will be reported interrupted'));
      }
      held.delete(row.id);
      if (held.size === 0) stopRenewing();
      opts.released?.(row.lane);
      pump();
    })();
  }

  /**
   * Lease renewal (heartbeat): every third of a lease, one statement renews the claims on all the
   * rows running here (one per running job was most of the statements at 500 sessions, when turns
   * wait seconds for the model). A row claimed just after a renewal is renewed at the next one, a
   * third of a lease later, well within its lease. A held row the statement did not find was taken
   * by another instance after this one stalled past the lease: its job stops here.
   */
  let renewTimer: ReturnType<typeof setInterval> | undefined;
  let renewing = false;
  function startRenewing(): void {
    if (renewTimer) return;
    renewTimer = setInterval(renew, Math.max(100, Math.floor(opts.leaseMs / 3)));
  }
  function stopRenewing(): void {
    if (renewTimer) clearInterval(renewTimer);
    renewTimer = undefined;
  }
  /** Renews the claims on `ids` held here; answers the ids found still held by this instance. */
  function renewClaims(ids: string[]): Promise<string[]> {
    const until = clock.now() + opts.leaseMs;
    return (
      opts.renew?.(ids, until) ??
      db
        .updateTable('hermes_work')
        .set({ claimed_until: until })
        .where('id', 'in', ids)
        .where('claimed_by', '=', opts.instanceId)
        .returning('id')
        .execute()
        .then((rows) => rows.map((r) => r.id))
    );
  }

  /**
   * A claim's lease counts from when it was asked for, and the statement may have waited for a
   * pooled connection: back later than a third of a lease (the renewal period), its leases may
   * have run out already, or will before the next renewal, and another instance may claim the rows
   * meanwhile. They are renewed before any job starts, and only those still held here run (the
   * others were claimed elsewhere, which runs them). With leases on a lone SQLite file nothing can
   * take them.
   */
  async function confirmLate(rows: ClaimedRow[], claimedAt: number): Promise<ClaimedRow[]> {
    if (!opts.heartbeat || rows.length === 0 || clock.now() - claimedAt <= opts.leaseMs / 3) return rows;
    let found: Set<string>;
    try {
      found = new Set(await renewClaims(rows.map((r) => r.id)));
    } catch (err) {
      // Unknown whether they are still ours: left for their leases to run out and a claim to find.
      log.warn({ err: (err as Error).message, rows: rows.length }, 'work queue: could not confirm a late claim; leaving the rows to be claimed again');
      return [];
    }
    const kept = rows.filter((r) => found.has(r.id));
    if (kept.length < rows.length) log.warn({ lost: rows.filter((r) => !found.has(r.id)).map((r) => r.id) }, 'work queue: a claim came back after its lease and another instance took the rows');
    return kept;
  }

  function renew(): void {
    // One at a time: a renewal still in flight is what the next one would repeat.
    if (renewing || held.size === 0) return;
    renewing = true;
    const ids = [...held.keys()];
    renewClaims(ids)
      .then(
        (found) => {
          const renewed = new Set(found);
          for (const id of ids) {
            const h = held.get(id);
            // Finished (and deleted) meanwhile, renewed, or already stopped: nothing to do.
            if (!h || renewed.has(id) || h.controller.signal.aborted) continue;
            log.error({ lane: h.lane, id }, 'work queue: lost the claim on a running job (this instance stalled); stopping it here');
            h.controller.abort();
          }
        },
        (err: Error) => log.warn({ err: err.message, rows: ids.length }, 'work queue: renewing claims failed; retrying'),
      )
      .finally(() => {
        renewing = false;
      });
  }

  function schedulePoll(): void {
    const every = pollMs();
    if (every <= 0) return;
    cancelPoll = clock.setTimer(() => {
      if (!running) return;
      pump();
      schedulePoll();
    }, every);
  }

  return {
    start(runner) {
      run = runner;
      running = true;
      schedulePoll();
      pump();
    },
    pump,
    wakeSoon,
    reserve(id, lane) {
      if (!running || !run || !opts.seesEveryAdd || settleMs() > 0) return undefined;
      if (held.size >= Math.max(1, opts.maxConcurrent())) return undefined;
      for (const h of held.values()) if (h.lane === lane) return undefined;
      held.set(id, { lane, controller: new AbortController() });
      return { claimedBy: opts.instanceId, claimedUntil: clock.now() + opts.leaseMs };
    },
    runReserved(row) {
      if (!held.has(row.id)) return;
      // Closed meanwhile: the row stays claimed, released at the next start like any other.
      if (!running) {
        held.delete(row.id);
        return settleIdle();
      }
      launch({ ...row, attempts: 1 });
    },
    unreserve(id) {
      if (!held.delete(id)) return;
      settleIdle();
      // Its room is free again.
      pump();
    },
    added(dueAt) {
      adds++;
      if (known && dueAt > clock.now() && (known.at === undefined || dueAt < known.at)) known = { at: dueAt };
    },
    abortLane(lane) {
      let found = false;
      for (const h of held.values()) {
        if (h.lane !== lane) continue;
        found = true;
        h.controller.abort();
      }
      return found;
    },
    holds: (lane) => [...held.values()].some((h) => h.lane === lane),
    active: () => held.size,
    idle: () => (held.size === 0 && !pumping ? Promise.resolve() : new Promise((r) => idleWaiters.push(r))),
    close() {
      running = false;
      if (!pumping) void deleteFinished();
      cancelSleep?.();
      cancelPoll?.();
      stopRenewing();
      for (const h of held.values()) h.controller.abort();
      settleIdle();
    },
  };
}
