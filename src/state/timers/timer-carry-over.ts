import type { Reminder } from '../reminders/reminder-record.js';
import { reminderRow } from '../reminders/reminder-store.js';
import type { DbOrTx, OpenedDatabase } from '../store/database.js';
import type { Store } from '../store/store.js';
import type { ScheduleRecord } from '../schedules/schedule-record.js';
import { scheduleRow } from '../schedules/schedule-store.js';
import { reminderWork, scheduleWork, type TimerJob } from './timer-work.js';
import type { WorkItem } from '../cluster/work-queue.js';

/**
 * Round 2 kept reminders as key-value records (`reminder:<id>`) with hand-kept indexes
 * (`reminders:due`, `reminders:firing`, `reminders:owner:<key>`). This moves each record into
 * `hermes_reminder`, with its work row when it is still to fire, in one transaction, then deletes
 * its key; the index keys go last. A crash in between moves it again and the rows already there
 * stay as they are (inserts that find a row do nothing).
 *
 * A reminder round 2 had claimed (`firing`) gets a row marked as started once (attempts = 1): its
 * delivery may have been posted, so it is delivered again marked "may be a repeat".
 */
export async function moveRound2Reminders(store: Store, database: OpenedDatabase): Promise<number> {
  let moved = 0;
  for (const key of await store.keysWithPrefix('reminder:')) {
    const r = await store.get<Reminder>(key);
    if (r && typeof r.id === 'string' && typeof r.ownerKey === 'string' && Number.isFinite(r.dueAt)) {
      const open = r.status === 'scheduled' || r.status === 'firing';
      const inserted = await database.db.transaction().execute(async (tx) => {
        const res = await tx.insertInto('hermes_reminder').values(reminderRow(r)).onConflict((c) => c.column('id').doNothing()).executeTakeFirst();
        if (Number(res.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
        if (open) await insertWork(tx, reminderWork(r.id, r.dueAt), r.status === 'firing' ? 1 : 0, r.createdAt);
        return true;
      });
      if (inserted) moved++;
    }
    await store.delete(key);
  }
  for (const key of await store.keysWithPrefix('reminders:')) await store.delete(key);
  return moved;
}

/**
 * Round 2 kept schedules as `schedule:<id>` with `schedules:due`, `schedules:running` and
 * `schedules:owner:<key>`. Each record becomes a row, with the work row of its next due time when
 * it is active. A run round 2 had in progress (`run` on the record) gets the row of its own due
 * time, marked started once: the runner finds the run on the record and reports it interrupted,
 * as after a crash, then the next due time's row (written with that report's claim of it) follows.
 */
export async function moveRound2Schedules(store: Store, database: OpenedDatabase): Promise<number> {
  let moved = 0;
  for (const key of await store.keysWithPrefix('schedule:')) {
    const r = await store.get<ScheduleRecord>(key);
    if (r && typeof r.id === 'string' && typeof r.ownerKey === 'string' && typeof r.status === 'string' && r.spec) {
      const record: ScheduleRecord = { ...r, skipped: r.skipped ?? { down: 0, busy: 0 }, runs: r.runs ?? 0 };
      const inserted = await database.db.transaction().execute(async (tx) => {
        const res = await tx.insertInto('hermes_schedule').values(scheduleRow(record)).onConflict((c) => c.column('id').doNothing()).executeTakeFirst();
        if (Number(res.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
        if (record.run) await insertWork(tx, scheduleWork(record.id, record.run.dueAt), 1, record.run.claimedAt);
        if (record.status === 'active' && record.nextDueAt !== undefined) await insertWork(tx, scheduleWork(record.id, record.nextDueAt), 0, record.createdAt);
        return true;
      });
      if (inserted) moved++;
    }
    await store.delete(key);
  }
  for (const key of await store.keysWithPrefix('schedules:')) await store.delete(key);
  return moved;
}

/** A work row as the queue writes it (no wake-up: the queue starts after the carry-over). */
export async function insertWork(tx: DbOrTx, item: WorkItem<TimerJob>, attempts: number, createdAt: number): Promise<void> {
  await tx
    .insertInto('hermes_work')
    .values({ id: item.id, kind: item.kind, lane: item.lane, order_key: item.order, due_at: item.dueAt ?? createdAt, payload: JSON.stringify(item.job), claimed_by: null, claimed_until: null, attempts, created_at: createdAt })
    .onConflict((c) => c.column('id').doNothing())
    .execute();
}
