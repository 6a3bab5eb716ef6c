import pg from 'pg';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createPgPool } from '../../src/state/store/postgres-store.js';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createInbox } from '../../src/gateway/inbox.js';
import { createReceiptJournal, KEEP_DONE_MS } from '../../src/gateway/receipts.js';
import { createPausedTurns } from '../../src/state/approvals/paused-turns.js';
import { createNotedMessages } from '../../src/state/sessions/noted-messages.js';
import { createChannelNotes } from '../../src/state/notes/channel-notes.js';
import { createLocalWorkQueue } from '../../src/state/cluster/local-work-queue.js';
import { createPgWorkQueue, type PgWorkQueue } from '../../src/state/cluster/pg-work-queue.js';
import type { WorkContext, WorkItem, WorkQueue } from '../../src/state/cluster/work-queue.js';
import { clockOrderKey, orderKey } from '../../src/gateway/order-key.js';
import { systemClock } from '../../src/basics/clock.js';
import { engineWanted, freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * The operational tables on each engine: the same tests on a SQLite file and on the real
 * PostgreSQL. `open()` gives the tables at a fresh location; `queue()` a work queue on them as one
 * instance would have it (on PostgreSQL, calling it twice gives two instances).
 */
const pgUrl = await postgresForTests();
const log = pino({ level: 'silent' });

interface Place {
  database: OpenedDatabase;
  /** Another handle on the same tables: a restart, or on PostgreSQL another instance. */
  reopen(): Promise<OpenedDatabase>;
  queue<J>(database: OpenedDatabase, name: string, max?: number): WorkQueue<J>;
  /** PostgreSQL only: a queue with its own settle and presence timing. */
  pgQueue?<J>(database: OpenedDatabase, name: string, timing: { settleMs?: number; presenceMs?: number; leaseMs?: number; max?: number }): PgWorkQueue<J>;
  /** PostgreSQL only: the schema's URL (for a pool of the test's own). */
  url?: string;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});
const track = (db: OpenedDatabase) => {
  cleanups.push(() => db.close());
  return db;
};

const engines: Array<{ name: string; open(): Promise<Place> }> = [
  {
    name: 'sqlite',
    async open() {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-tables-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'hermes.sqlite');
      return {
        database: track(await openSqliteDatabase(file)),
        reopen: async () => track(await openSqliteDatabase(file)),
        queue: (database, _name, max = 4) => createLocalWorkQueue({ database, clock: systemClock, log, maxConcurrent: () => max }),
      };
    },
  },
];
if (pgUrl) {
  engines.push({
    name: 'postgres',
    async open() {
      const schema = await freshSchema(pgUrl);
      const pool = createPgPool(schema.url, { max: 6 });
      cleanups.push(() => schema.drop());
      cleanups.push(() => pool.end());
      return {
        database: track(await openPostgresDatabase(pool)),
        reopen: async () => track(await openPostgresDatabase(pool)),
        queue: (database, name, max = 4) =>
          createPgWorkQueue({ database, url: schema.url, instanceId: name, clock: systemClock, log, maxConcurrent: () => max, leaseMs: 600, pollMs: 100, settleMs: 0 }),
        pgQueue: (database, name, { max = 4, ...timing }) =>
          createPgWorkQueue({ database, url: schema.url, instanceId: name, clock: systemClock, log, maxConcurrent: () => max, leaseMs: 600, pollMs: 100, ...timing }),
        url: schema.url,
      };
    },
  });
}

const item = (id: string, lane: string, order: string, over: Partial<WorkItem<string>> = {}): WorkItem<string> => ({ id, kind: 'turn', lane, order, job: id, ...over });
const slackOrder = (ts: string) => orderKey(BigInt(ts.replace('.', '')));

/** Resolves when `pred` holds, checking on every event-loop turn (bounded by `ms`). */
async function until(pred: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe.each(engines.filter((e) => engineWanted(e.name)))('operational tables on $name', (engine) => {
  it('migrates once: a second open finds every step applied and the tables there', async () => {
    const place = await engine.open();
    const again = await place.reopen();
    await again.db.insertInto('hermes_receipt').values({ platform: 'slack', id: 'r', body: '{}', received_at: 1 }).execute();
    const rows = await place.database.db.selectFrom('hermes_receipt').selectAll().execute();
    expect(rows).toHaveLength(1);
  });

  it('accepts a message once: the dedupe mark and its work row commit together', async () => {
    const place = await engine.open();
    const queue = place.queue<string>(place.database, 'a');
    cleanups.push(() => queue.close());
    const inbox = createInbox(place.database, queue, () => Date.now());
    expect(await inbox.accept('slack', 'C1:1.0', item('msg:1', 'L', slackOrder('1.000001')))).toBe(true);
    expect(await inbox.accept('slack', 'C1:1.0', item('msg:1', 'L', slackOrder('1.000001')))).toBe(false);
    // The same id on another platform is another message.
    expect(await inbox.accept('discord', 'C1:1.0', item('msg:d1', 'L', slackOrder('1.000002')))).toBe(true);
    // A message answered without work is marked too, so a retry is a duplicate.
    expect(await inbox.mark('slack', 'C1:2.0', 'refused')).toBe(true);
    expect(await inbox.mark('slack', 'C1:2.0', 'refused')).toBe(false);
    expect(await inbox.accept('slack', 'C1:2.0', item('msg:2', 'L', slackOrder('2.0')))).toBe(false);
    const work = await place.database.db.selectFrom('hermes_work').select('id').orderBy('id').execute();
    expect(work.map((w) => w.id)).toEqual(['msg:1', 'msg:d1']);
  });

  it("accepts in one statement, the mark, the work row and the delivery's receipt settled; a duplicate settles its receipt and queues nothing", async () => {
    const place = await engine.open();
    const queue = place.queue<string>(place.database, 'a');
    cleanups.push(() => queue.close());
    const journal = createReceiptJournal(place.database, 'slack', () => 1_000);
    await journal.add('event:E1', {});
    await journal.add('event:E2', {});
    await journal.add('event:E3', {});
    const inbox = createInbox(place.database, queue, () => 2_000);
    const before = place.database.stats.queries;
    expect(await inbox.accept('slack', 'C1:7.0', item('msg:7', 'L7', slackOrder('7.0')), 'event:E1')).toBe(true);
    expect(place.database.stats.queries - before).toBe(1);
    const done = async () => (await place.database.db.selectFrom('hermes_receipt').select(['id', 'done_at']).orderBy('id').execute()).map((r) => [r.id, r.done_at]);
    expect(await done()).toEqual([['event:E1', 2_000], ['event:E2', null], ['event:E3', null]]);
    // The same message again (the platform's retry under another delivery): nothing new, its receipt done.
    expect(await inbox.accept('slack', 'C1:7.0', item('msg:7b', 'L7', slackOrder('7.0')), 'event:E2')).toBe(false);
    // A message marked without work, then brought again with work: a duplicate as well.
    expect(await inbox.mark('slack', 'C1:8.0', 'noted')).toBe(true);
    expect(await inbox.accept('slack', 'C1:8.0', item('msg:8', 'L8', slackOrder('8.0')), 'event:E3')).toBe(false);
    expect(await done()).toEqual([['event:E1', 2_000], ['event:E2', 2_000], ['event:E3', 2_000]]);
    const marks = await place.database.db.selectFrom('hermes_inbound').select(['id', 'outcome', 'accepted_at']).orderBy('id').execute();
    expect(marks).toEqual([
      { id: 'C1:7.0', outcome: 'queued', accepted_at: 2_000 },
      { id: 'C1:8.0', outcome: 'noted', accepted_at: 2_000 },
    ]);
    const work = await place.database.db.selectFrom('hermes_work').select(['id', 'lane', 'payload', 'attempts', 'claimed_by']).execute();
    expect(work).toEqual([{ id: 'msg:7', lane: 'L7', payload: JSON.stringify('msg:7'), attempts: 0, claimed_by: null }]);
  });

  it('leaves no dedupe mark when the transaction fails after it: the replay is accepted', async () => {
    const place = await engine.open();
    const real = place.queue<string>(place.database, 'a');
    cleanups.push(() => real.close());
    // The process "dies" after the work row is written and before the commit. (The transaction's
    // path: on PostgreSQL the queue writes both in one statement, addMarked, atomic by itself.)
    const { addMarked: _oneStatement, ...inTransaction } = real;
    const crashing: WorkQueue<string> = {
      ...inTransaction,
      addIn: async (tx, it) => {
        await real.addIn(tx, it);
        throw new Error('killed before commit');
      },
    };
    await expect(createInbox(place.database, crashing, () => Date.now()).accept('slack', 'C1:5.0', item('msg:5', 'L', slackOrder('5.0')))).rejects.toThrow('killed before commit');
    expect(await place.database.db.selectFrom('hermes_inbound').selectAll().execute()).toEqual([]);
    expect(await place.database.db.selectFrom('hermes_work').selectAll().execute()).toEqual([]);
    expect(await createInbox(place.database, real, () => Date.now()).accept('slack', 'C1:5.0', item('msg:5', 'L', slackOrder('5.0')))).toBe(true);
  });

  it('journals receipts per platform, oldest first; a retry keeps the first copy', async () => {
    const place = await engine.open();
    let t = 1_000;
    const slack = createReceiptJournal(place.database, 'slack', () => t++);
    await slack.add('event:Ev2', { n: 2 });
    await slack.add('event:Ev1_%', { n: 1 });
    await slack.add('event:Ev2', { n: 'retry' });
    await slack.add('event:Ev3', { n: 3 });
    await slack.done('event:Ev3');
    await createReceiptJournal(place.database, 'discord', () => t++).add('event:Ev9', {});
    const pending = await createReceiptJournal(place.database, 'slack').pending();
    expect(pending.map((r) => [r.id, r.body])).toEqual([['event:Ev2', { n: 2 }], ['event:Ev1_%', { n: 1 }]]);
  });

  it('keeps a handled delivery as done: a redelivery reads it as handled, in the one statement that journals it, until swept by age', async () => {
    const place = await engine.open();
    let t = 1_000;
    const slack = createReceiptJournal(place.database, 'slack', () => t);
    expect(await slack.add('event:EvA', { n: 1 })).toBe(false);
    expect(await slack.add('event:EvA', { n: 'retry while the first runs' })).toBe(false);
    await slack.done('event:EvA');
    expect(await slack.pending()).toEqual([]);
    // Dropped (needed nothing, or handing over failed): gone, so a redelivery is handled afresh.
    expect(await slack.add('event:EvB', {})).toBe(false);
    await slack.drop('event:EvB');
    expect(await slack.add('event:EvB', {})).toBe(false);
    await slack.drop('event:EvB');
    // The handled one stays handled, and a redelivery does not make it pending again.
    t += 1_000;
    const before = place.database.stats.queries;
    expect(await slack.add('event:EvA', { n: 'redelivered' })).toBe(true);
    expect(place.database.stats.queries - before).toBe(1);
    expect(await slack.pending()).toEqual([]);
    expect(await createReceiptJournal(place.database, 'discord', () => t).add('event:EvA', {})).toBe(false);
    // Swept by its done time, a day later; another platform's rows are its own.
    t += KEEP_DONE_MS - 1_000;
    expect(await slack.sweep()).toBe(0);
    t += 1;
    expect(await slack.sweep()).toBe(1);
    expect(await slack.add('event:EvA', {})).toBe(false);
    expect((await slack.pending()).map((r) => r.id)).toEqual(['event:EvA']);
    expect((await createReceiptJournal(place.database, 'discord', () => t).pending()).map((r) => r.id)).toEqual(['event:EvA']);
  });

  it('keeps noted thread messages per thread, the newest `limit`, until taken or deleted; a restart finds them', async () => {
    const place = await engine.open();
    const noted = createNotedMessages(place.database);
    const m = (id: string, at: number, text = `m${id}`) => ({ id, author: { id: 'U2', name: 'bob', isBot: false }, at, text });
    expect(await noted.list('slack:T:C:1')).toEqual([]);
    await noted.add('slack:T:C:1', m('3', 30), 3);
    await noted.add('slack:T:C:1', m('1', 10), 3);
    await noted.add('slack:T:C:2', m('9', 90), 3);
    await noted.add('slack:T:C:1', m('2', 20), 3);
    await noted.add('slack:T:C:1', m('4', 40), 3);
    expect((await noted.list('slack:T:C:1')).map((x) => x.id)).toEqual(['2', '3', '4']);
    await noted.revise('slack:T:C:1', '3', 'edited');
    await noted.revise('slack:T:C:1', '7', 'not noted: nothing');
    await noted.revise('slack:T:C:1', '2', null);
    expect(await noted.list('slack:T:C:1')).toEqual([{ ...m('3', 30, 'edited'), edited: true }, m('4', 40)]);
    await noted.remove('slack:T:C:1', ['3', '4']);
    expect(await noted.list('slack:T:C:1')).toEqual([]);
    // Another handle (a restart, or another instance) sees what was noted before it opened and since.
    const again = createNotedMessages(await place.reopen());
    expect(await again.list('slack:T:C:2')).toEqual([m('9', 90)]);
    await noted.add('slack:T:C:1', m('5', 50), 3);
    if (engine.name === 'postgres') expect((await again.list('slack:T:C:1')).map((x) => x.id)).toEqual(['5']);
    expect((await createNotedMessages(await place.reopen()).list('slack:T:C:1')).map((x) => x.id)).toEqual(['5']);
  });

  it("keeps a paused turn's state until it ends; a later pause of the same turn replaces it", async () => {
    const place = await engine.open();
    const turns = createPausedTurns<{ turnId: string; sessionId: string; stepsUsed: number }>(place.database, () => 5);
    await turns.save('t1', 's1', { turnId: 't1', sessionId: 's1', stepsUsed: 1 });
    await turns.save('t2', 's1', { turnId: 't2', sessionId: 's1', stepsUsed: 2 });
    await turns.save('t1', 's1', { turnId: 't1', sessionId: 's1', stepsUsed: 3 });
    expect(await turns.get('t1')).toEqual({ turnId: 't1', sessionId: 's1', stepsUsed: 3 });
    expect(await turns.which(['t1', 't3'])).toEqual(new Set(['t1']));
    expect(await turns.which([])).toEqual(new Set());
    await turns.delete('t1');
    expect(await turns.get('t1')).toBeUndefined();
    expect(await (await place.reopen()).db.selectFrom('hermes_paused_turn').select(['turn_id', 'session_id', 'paused_at']).execute()).toEqual([{ turn_id: 't2', session_id: 's1', paused_at: 5 }]);
  });

  it("runs a lane's work in the platform's order, not the order it was written, one at a time", async () => {
    const place = await engine.open();
    const queue = place.queue<string>(place.database, 'a');
    cleanups.push(() => queue.close());
    // Written 3, 1, 2 (a slower listener wrote 1 late); posted 1, 2, 3.
    await queue.add(item('m3', 'L', slackOrder('1700000000.000300')));
    await queue.add(item('m1', 'L', slackOrder('1700000000.000100')));
    await queue.add(item('m2', 'L', slackOrder('1700000000.000200')));
    const ran: string[] = [];
    let inLane = 0;
    let overlapped = false;
    await queue.start(async (job) => {
      inLane++;
      if (inLane > 1) overlapped = true;
      await new Promise((r) => setTimeout(r, 10));
      ran.push(job);
      inLane--;
    });
    await until(() => ran.length === 3);
    expect(ran).toEqual(['m1', 'm2', 'm3']);
    expect(overlapped).toBe(false);
    await queue.idle();
    await until(() => true);
    expect(await place.database.db.selectFrom('hermes_work').selectAll().execute()).toEqual([]);
  });

  it('runs different lanes side by side, and due work only when it is due', async () => {
    const place = await engine.open();
    const queue = place.queue<string>(place.database, 'a');
    cleanups.push(() => queue.close());
    const started: Array<{ job: string; at: number }> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const t0 = Date.now();
    await queue.start(async (job) => {
      started.push({ job, at: Date.now() });
      if (job.startsWith('slow')) await gate;
    });
    await queue.add(item('slow-a', 'A', clockOrderKey(t0)));
    await queue.add(item('b', 'B', clockOrderKey(t0)));
    await queue.add(item('later', 'C', clockOrderKey(t0), { kind: 'reminder', dueAt: t0 + 300 }));
    // 'slow-a' holds its lane until the gate opens; lane B's work runs meanwhile.
    await until(() => started.some((s) => s.job === 'b') && started.some((s) => s.job === 'slow-a'));
    await until(() => started.some((s) => s.job === 'later'));
    expect(started.find((s) => s.job === 'later')!.at).toBeGreaterThanOrEqual(t0 + 300);
    release();
    await queue.idle();
  });

  it('claims a row cut off mid-run again after a restart, telling the job it started before', async () => {
    const place = await engine.open();
    const first = place.queue<string>(place.database, 'a');
    let began!: () => void;
    const running = new Promise<void>((r) => (began = r));
    await first.start(async (_job, ctx) => {
      began();
      await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
      return 'interrupted';
    });
    await first.add(item('cut', 'L', clockOrderKey(Date.now())));
    await running;
    await first.close();
    await first.idle();

    const second = place.queue<string>(await place.reopen(), 'b');
    cleanups.push(() => second.close());
    const seen: WorkContext[] = [];
    await second.start(async (_job, ctx) => {
      seen.push(ctx);
    });
    await until(() => seen.length === 1, 15_000);
    expect(seen[0]).toMatchObject({ id: 'cut', kind: 'turn', lane: 'L', startedBefore: true });
  });
});

if (pgUrl) describe('work queue with two instances on PostgreSQL', () => {
  it('accepts a message in one statement: the mark, the row and its notification, or nothing for a duplicate', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    const a = place.queue<string>(place.database, 'a');
    cleanups.push(() => a.close());
    expect(a.addMarked).toBeDefined();
    const listener = new pg.Client({ connectionString: pgUrl });
    await listener.connect();
    cleanups.push(() => listener.end());
    const heard: string[] = [];
    listener.on('notification', (n) => {
      const said = JSON.parse(n.payload ?? '{}') as { t?: string; l?: string };
      if (said.t === 'add' && said.l?.startsWith('one-statement')) heard.push(said.l);
    });
    await listener.query('LISTEN hermes_work');
    const statements: string[] = [];
    const counting = { ...place.database, db: place.database.db.withPlugin({ transformQuery: (a) => (statements.push(a.node.kind), a.node), transformResult: async (a) => a.result }) };
    const inbox = createInbox(counting, a, () => Date.now());
    expect(await inbox.accept('slack', 'C9:1.0', item('msg:o1', 'one-statement-1', slackOrder('1.0')))).toBe(true);
    expect(await inbox.accept('slack', 'C9:1.0', item('msg:o1-again', 'one-statement-1', slackOrder('1.0')))).toBe(false);
    // Marked without work (a refusal): a later accept of the same message writes no row.
    expect(await inbox.mark('slack', 'C9:2.0', 'refused')).toBe(true);
    expect(await inbox.accept('slack', 'C9:2.0', item('msg:o2', 'one-statement-2', slackOrder('2.0')))).toBe(false);
    // The inbox itself sent nothing through Kysely (no BEGIN, no mark of its own) but the refusal's mark.
    expect(statements).toEqual(['InsertQueryNode']);
    const work = await place.database.db.selectFrom('hermes_work').select(['id', 'lane']).execute();
    expect(work).toEqual([{ id: 'msg:o1', lane: 'one-statement-1' }]);
    const marks = await place.database.db.selectFrom('hermes_inbound').select(['id', 'outcome']).orderBy('id').execute();
    expect(marks).toEqual([
      { id: 'C9:1.0', outcome: 'queued' },
      { id: 'C9:2.0', outcome: 'refused' },
    ]);
    await until(() => heard.length > 0, 5_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual(['one-statement-1']);
  });

  it('runs every row exactly once, each lane one at a time and in order, whichever instance takes it', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    // Two lanes at a time each, four lanes: both instances have work to do.
    const a = place.queue<string>(place.database, 'a', 2);
    const b = place.queue<string>(await place.reopen(), 'b', 2);
    cleanups.push(() => a.close(), () => b.close());
    const ran: Array<{ lane: string; job: string; by: string }> = [];
    const inLane = new Map<string, number>();
    let overlapped = false;
    const runner = (by: string) => async (job: string, ctx: WorkContext) => {
      const n = (inLane.get(ctx.lane) ?? 0) + 1;
      inLane.set(ctx.lane, n);
      if (n > 1) overlapped = true;
      await new Promise((r) => setTimeout(r, 10));
      ran.push({ lane: ctx.lane, job, by });
      inLane.set(ctx.lane, n - 1);
    };
    const lanes = ['L1', 'L2', 'L3', 'L4'];
    const writes: Array<Promise<boolean>> = [];
    for (let i = 0; i < 40; i++) {
      const lane = lanes[i % lanes.length]!;
      // Written by both instances in a shuffled order; the order key says where each belongs.
      const order = orderKey(1_700_000_000_000_000n + BigInt(i));
      writes.push((i % 3 === 0 ? b : a).add(item(`j${String(i).padStart(2, '0')}`, lane, order)));
    }
    await Promise.all(writes.reverse());
    await a.start(runner('a'));
    await b.start(runner('b'));
    await until(() => ran.length >= 40, 20_000);
    await Promise.all([a.idle(), b.idle()]);
    expect(ran).toHaveLength(40);
    expect(new Set(ran.map((r) => r.job)).size).toBe(40);
    expect(overlapped).toBe(false);
    for (const lane of lanes) {
      const jobs = ran.filter((r) => r.lane === lane).map((r) => r.job);
      expect(jobs).toEqual([...jobs].sort());
    }
    expect(new Set(ran.map((r) => r.by))).toEqual(new Set(['a', 'b']));
  });

  it('keeps the claims of several jobs running past their lease (renewed together), so no instance claims them again', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    // Leases of 600 ms, renewed every 200 ms; jobs run 1.5 s; both instances look every 100 ms.
    const a = place.queue<string>(place.database, 'a', 4);
    const b = place.queue<string>(await place.reopen(), 'b', 4);
    cleanups.push(() => a.close(), () => b.close());
    const starts: string[] = [];
    const atEnd: Array<{ id: string; claimed_by: string | null; attempts: number }> = [];
    const runner = (by: string) => async (job: string, ctx: WorkContext) => {
      starts.push(`${job}@${by}`);
      await new Promise((r) => setTimeout(r, 1_500));
      // Still this instance's claim, taken once: nobody claimed it again meanwhile.
      atEnd.push(...(await place.database.db.selectFrom('hermes_work').select(['id', 'claimed_by', 'attempts']).where('id', '=', ctx.id).execute()));
    };
    for (const lane of ['L1', 'L2', 'L3']) await a.add(item(`j-${lane}`, lane, clockOrderKey(Date.now())));
    await a.start(runner('a'));
    await b.start(runner('b'));
    await until(() => atEnd.length === 3, 10_000);
    await Promise.all([a.idle(), b.idle()]);
    await new Promise((r) => setTimeout(r, 300));
    expect(starts.sort()).toEqual(['j-L1@a', 'j-L2@a', 'j-L3@a']);
    expect(atEnd.sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual(['j-L1', 'j-L2', 'j-L3'].map((id) => ({ id, claimed_by: 'a', attempts: 1 })));
    expect(await place.database.db.selectFrom('hermes_work').select('id').execute()).toEqual([]);
  });

  it('never claims again a row whose job still runs here, even when its lease ran out (a late renewal)', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    // A lease of a minute: renewed every 20 s, so within the test only the poll (every 100 ms) looks.
    const a = place.pgQueue!<string>(place.database, 'a', { settleMs: 0, leaseMs: 60_000 });
    cleanups.push(() => a.close());
    const starts: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await a.start(async (job) => {
      starts.push(job);
      await gate;
    });
    await a.add(item('long', 'L1', clockOrderKey(Date.now())));
    await until(() => a.active() === 1);
    // The lease runs out while the job is still running here.
    await place.database.db.updateTable('hermes_work').set({ claimed_until: Date.now() - 1 }).where('id', '=', 'long').execute();
    await new Promise((r) => setTimeout(r, 500));
    release();
    await a.idle();
    expect(starts).toEqual(['long']);
  });

  it('runs a claim that came back after its lease (it waited for a pooled connection) only once', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    // A's statements go through a pool of one connection, which the test holds for a while.
    const poolA = createPgPool(place.url!, { max: 1 });
    cleanups.push(() => poolA.end());
    const a = place.pgQueue!<string>(track(await openPostgresDatabase(poolA)), 'a', { settleMs: 0 });
    // B can run one job at a time, and is busy with 'blocker' until the test lets it go.
    const b = place.pgQueue!<string>(place.database, 'b', { settleMs: 0, max: 1 });
    cleanups.push(() => a.close(), () => b.close());
    const starts: string[] = [];
    let unblock!: () => void;
    const blocked = new Promise<void>((r) => (unblock = r));
    const runner = (by: string) => async (job: string) => {
      starts.push(`${job}@${by}`);
      if (job === 'blocker') await blocked;
      else await new Promise((r) => setTimeout(r, 1_000));
    };
    await b.start(runner('b'));
    await b.add(item('blocker', 'L0', clockOrderKey(Date.now())));
    await until(() => b.active() === 1);
    await a.start(runner('a'));
    await a.idle();
    const held = await poolA.connect();
    await b.add(item('late', 'L1', clockOrderKey(Date.now())));
    // A's claim of 'late' waits for the connection longer than a lease (600 ms).
    await new Promise((r) => setTimeout(r, 900));
    held.release();
    await until(() => a.active() === 1 || starts.includes('late@b'), 5_000);
    // B has room again: it looks at once (the job's end pumps its loop).
    unblock();
    await new Promise((r) => setTimeout(r, 400));
    await Promise.all([a.idle(), b.idle()]);
    expect(starts.filter((s) => s.startsWith('late@'))).toHaveLength(1);
  });

  it('stops a job here when its claim was taken (this instance stalled past its lease); the others keep running', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    const a = place.queue<string>(place.database, 'a', 4);
    cleanups.push(() => a.close());
    const stopped: string[] = [];
    await a.start(async (job, ctx) => {
      await new Promise<void>((r) => {
        const t = setTimeout(r, 1_500);
        ctx.signal.addEventListener('abort', () => {
          clearTimeout(t);
          stopped.push(job);
          r();
        }, { once: true });
      });
      return ctx.signal.aborted ? 'interrupted' : undefined;
    });
    await a.add(item('kept', 'L1', clockOrderKey(Date.now())));
    await a.add(item('taken', 'L2', clockOrderKey(Date.now())));
    await until(() => a.active() === 2);
    // As if another instance had claimed it after this one's lease ran out.
    await place.database.db.updateTable('hermes_work').set({ claimed_by: 'other', claimed_until: Date.now() + 60_000 }).where('id', '=', 'taken').execute();
    await until(() => stopped.length === 1, 5_000);
    expect(stopped).toEqual(['taken']);
    await a.idle();
    expect(stopped).toEqual(['taken']);
    // The row stays with its new holder; the finished one is gone.
    const rows = await place.database.db.selectFrom('hermes_work').select(['id', 'claimed_by']).execute();
    expect(rows).toEqual([{ id: 'taken', claimed_by: 'other' }]);
  });

  it('settles new rows only while another instance is live, and then still runs posts accepted by both in platform order', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    const ran: string[] = [];
    const runner = async (job: string) => void ran.push(job);
    // A settles for a minute, B for 1.5 s: a row runs at once only if nobody settles it.
    const a = place.pgQueue!<string>(place.database, 'a', { settleMs: 60_000, presenceMs: 100 });
    cleanups.push(() => a.close());
    await a.start(runner);
    await a.add(item('alone', 'L', clockOrderKey(Date.now())));
    await until(() => ran.includes('alone'));
    expect(a.peers()).toBe(0);

    const b = place.pgQueue!<string>(await place.reopen(), 'b', { settleMs: 1_500, presenceMs: 100 });
    cleanups.push(() => b.close());
    await b.start(runner);
    await until(() => a.peers() === 1 && b.peers() === 1);
    // Posted m1 then m2; B accepts m2 first, A accepts m1 a moment later. Unsettled, m2 would run first.
    await b.add(item('m2', 'L', slackOrder('1800000000.000200')));
    // Nothing to await here: a row that stays unclaimed sends no event. A lone instance claims a
    // new row within milliseconds of its notification; m2 must still be waiting after 300.
    await new Promise((r) => setTimeout(r, 300));
    expect(ran).toEqual(['alone']);
    await a.add(item('m1', 'L', slackOrder('1800000000.000100')));
    await until(() => ran.length === 3);
    expect(ran).toEqual(['alone', 'm1', 'm2']);

    // B says goodbye: A is alone again and stops settling.
    await b.close();
    await until(() => a.peers() === 0);
    await a.add(item('after', 'L', clockOrderKey(Date.now())));
    await until(() => ran.includes('after'));
  });

  it('tells a running lane whether rows may be waiting behind it: counted at the claim, then by the adds it hears', async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    const a = place.queue<string>(place.database, 'a');
    const b = place.queue<string>(await place.reopen(), 'b');
    cleanups.push(() => a.close(), () => b.close());
    const gates = new Map<string, () => void>();
    const started = new Set<string>();
    await b.add(item('m1', 'M', clockOrderKey(1)));
    await b.add(item('m2', 'M', clockOrderKey(2)));
    await a.start(async (job) => {
      started.add(job);
      await new Promise<void>((r) => gates.set(job, r));
    });
    // m1 is claimed with m2 behind it.
    await until(() => started.has('m1'));
    expect(a.mayHaveWaiting('M')).toBe(true);
    await a.add(item('l1', 'L', clockOrderKey(3)));
    await until(() => started.has('l1'));
    expect(a.mayHaveWaiting('L')).toBe(false);
    // Another instance accepts a message for the running lane: A hears of it.
    await b.add(item('l2', 'L', clockOrderKey(4)));
    await until(() => a.mayHaveWaiting('L'));
    // Steering took it in and removed it.
    a.removedWaiting('L', 1);
    expect(a.mayHaveWaiting('L')).toBe(false);
    expect(a.mayHaveWaiting('elsewhere')).toBe(true);
    for (const job of ['m1', 'l1']) gates.get(job)!();
    await until(() => started.has('m2') && started.has('l2'));
    for (const job of ['m2', 'l2']) gates.get(job)!();
    await a.idle();
  });

  it("keeps a channel's notes in memory while the instances tell each other of changes", async () => {
    const place = await engines.find((e) => e.name === 'postgres')!.open();
    const dbA = place.database;
    const dbB = await place.reopen();
    const a = place.pgQueue!<string>(dbA, 'a', { settleMs: 0, presenceMs: 100 });
    const b = place.pgQueue!<string>(dbB, 'b', { settleMs: 0, presenceMs: 100 });
    cleanups.push(() => a.close(), () => b.close());
    await a.start(async () => undefined);
    await b.start(async () => undefined);
    const notesA = createChannelNotes({ database: dbA, clock: systemClock, invalidations: a.invalidations });
    const notesB = createChannelNotes({ database: dbB, clock: systemClock, invalidations: b.invalidations });
    const channel = { platform: 'slack', workspaceId: 'T1', channelId: 'C1', isDm: false } as const;
    const alice = { platform: 'slack', workspaceId: 'T1', userId: 'U1', displayName: 'alice' } as const;
    expect(await notesA.get(channel)).toBeUndefined();
    await notesB.set(channel, 'deploys go through #ops', alice);
    await untilAsync(async () => (await notesA.get(channel))?.text === 'deploys go through #ops');
    // Kept: a change made behind the instances' backs (no notification) is not read again.
    await dbA.db.updateTable('hermes_channel_note').set({ text: 'changed behind their backs' }).execute();
    expect((await notesA.get(channel))?.text).toBe('deploys go through #ops');
    // A change through either instance reaches both.
    expect(await notesA.clear(channel)).toBe(true);
    await untilAsync(async () => (await notesB.get(channel)) === undefined);
    expect(await notesA.get(channel)).toBeUndefined();
  });
});

async function untilAsync(pred: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
