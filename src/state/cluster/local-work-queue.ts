import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { OpenedDatabase } from '../store/database.js';
import { ALREADY_ACCEPTED } from '../store/inbox-schema.js';
import { createWorkLoop, rowOf } from './work-loop.js';
import type { WorkQueue } from './work-queue.js';

export interface LocalWorkQueueOptions {
  database: OpenedDatabase;
  clock: Clock;
  log: Logger;
  maxConcurrent: () => number;
  /** Called when the governor allows more work at once: a wake-up for waiting rows. */
  onRaise?(fn: () => void): void;
  /** Default 0: one process accepts in the order its listeners finish; see work-loop.ts. */
  settleMs?: number;
}

/**
 * The WorkQueue of a lone instance (the SQLite file, which one process owns): rows in the same
 * table as on PostgreSQL, woken in-process. Claims left by the previous process are released at
 * start, since nobody else can hold them; their attempt count stays, so those rows run with
 * `startedBefore` and are reported, not repeated.
 */
export function createLocalWorkQueue<J>(opts: LocalWorkQueueOptions): WorkQueue<J> {
  const { db } = opts.database;
  // Unclaimed rows per lane, as far as this process's adds and claims tell (seeded from the table at
  // start). Rows removed another way leave it too high, which only costs a look that finds nothing.
  // Rows claimed that it never counted (none should be) leave it too low: the loop's timer then
  // still looks within a minute (work-loop.ts, noneUnclaimed).
  const unclaimed = new Map<string, number>();
  const count = (lane: string, by: number) => {
    const n = (unclaimed.get(lane) ?? 0) + by;
    if (n > 0) unclaimed.set(lane, n);
    else unclaimed.delete(lane);
  };
  const loop = createWorkLoop<J>({
    database: opts.database,
    instanceId: 'local',
    clock: opts.clock,
    log: opts.log,
    maxConcurrent: opts.maxConcurrent,
    // Nobody else can take a claim: it lasts until the job ends or the process does.
    leaseMs: 100 * 365 * 24 * 3600 * 1000,
    settleMs: opts.settleMs ?? 0,
    pollMs: 0,
    heartbeat: false,
    // The file is this process's alone (sqlite-owner-lock.ts) and rows enter through addIn.
    seesEveryAdd: true,
    claimed: (lane) => count(lane, -1),
    // A job's end looked for more work with a claim that, on a quiet lane, found nothing: one
    // statement per reply. This process adds every row, so it knows when there is none.
    noneUnclaimed: () => unclaimed.size === 0,
  });
  opts.onRaise?.(() => loop.pump());
  let started = false;

  const queue: WorkQueue<J> = {
    async addIn(tx, item) {
      const row = rowOf(item, opts.clock.now());
      // Counted before it is written, so an add of the same lane meanwhile sees it waiting (addMarked).
      count(item.lane, 1);
      let added = false;
      try {
        const r = await tx.insertInto('hermes_work').values(row).onConflict((c) => c.column('id').doNothing()).executeTakeFirst();
        added = Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
      } finally {
        if (!added) count(item.lane, -1);
      }
      // Told even if the caller's transaction then rolls back: a wake-up too many claims nothing.
      loop.added(row.due_at);
      return added;
    },
    async addMarked(mark, item, receipt) {
      const row = rowOf(item, opts.clock.now());
      // No row of the lane waits here (and none runs, the loop checks): the row is written claimed
      // and runs as soon as it is committed, without a claim statement. Otherwise it is counted
      // waiting before it is written, so a later add of the lane does not overtake it.
      const lease = row.due_at <= opts.clock.now() && !unclaimed.has(item.lane) ? loop.reserve(row.id, item.lane) : undefined;
      if (!lease) count(item.lane, 1);
      let written = false;
      // One statement (schema step 0014's view): the mark, the receipt settled and the row, or,
      // when the mark is there already, nothing and ALREADY_ACCEPTED.
      try {
        await db
          .insertInto('hermes_accept')
          .values({
            platform: mark.platform,
            id: mark.id,
            outcome: 'queued',
            accepted_at: mark.acceptedAt,
            receipt_id: receipt?.id ?? null,
            done_at: receipt?.doneAt ?? null,
            work_id: row.id,
            kind: row.kind,
            lane: row.lane,
            order_key: row.order_key,
            due_at: row.due_at,
            payload: row.payload,
            created_at: row.created_at,
            claimed_by: lease?.claimedBy ?? null,
            claimed_until: lease?.claimedUntil ?? null,
            attempts: lease ? 1 : 0,
          })
          .execute();
        written = true;
      } catch (err) {
        if (!String((err as Error).message).includes(ALREADY_ACCEPTED)) throw err;
        // A duplicate: only its receipt is left to settle (the mark may be of a note or a refusal).
        if (receipt) {
          await db
            .updateTable('hermes_receipt')
            .set({ done_at: receipt.doneAt })
            .where('platform', '=', receipt.platform)
            .where('id', '=', receipt.id)
            .where('done_at', 'is', null)
            .execute();
        }
        return false;
      } finally {
        if (!written) {
          if (lease) loop.unreserve(row.id);
          else count(item.lane, -1);
        }
      }
      if (lease) loop.runReserved({ id: row.id, kind: row.kind, lane: row.lane, payload: row.payload });
      else loop.added(row.due_at);
      return true;
    },
    wake() {
      if (started) loop.pump();
    },
    async add(item) {
      const added = await queue.addIn(db, item);
      queue.wake(item.lane);
      return added;
    },
    async start(run) {
      if (started) return;
      await db.updateTable('hermes_work').set({ claimed_by: null, claimed_until: null }).where('claimed_by', 'is not', null).execute();
      const lanes = await db.selectFrom('hermes_work').select(['lane', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('lane').execute();
      for (const l of lanes) count(l.lane, Number(l.n));
      started = true;
      loop.start(run);
    },
    stopElsewhere: async () => false,
    mayHaveWaiting: (lane) => unclaimed.has(lane),
    removedWaiting: (lane, n) => count(lane, -n),
    active: () => loop.active(),
    idle: () => loop.idle(),
    async close() {
      loop.close();
    },
  };
  return queue;
}
