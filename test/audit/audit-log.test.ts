import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createPgPool } from '../../src/state/store/postgres-store.js';
import { openPostgresDatabase, openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createAuditLog, type AuditLog } from '../../src/state/audit/audit-log.js';
import { createAuditRetention, DAY_MS } from '../../src/state/audit/audit-retention.js';
import { hashArgs } from '../../src/state/approvals/approval-store.js';
import { createRedactor } from '../../src/runtime/trace/redact.js';
import { engineWanted, freshSchema, postgresForTests } from '../helpers/postgres.js';
import { memoryLogger } from '../reminders/fixtures.js';
import { advanceUntil, ManualClock } from '../reminders/manual-clock.js';

/** The audit table on a SQLite file and on the real PostgreSQL: the same tests on each. */
const pgUrl = await postgresForTests();
const silent = pino({ level: 'silent' });
const T0 = Date.UTC(2026, 11, 1, 12, 0);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const engines: Array<{ name: string; open(): Promise<OpenedDatabase> }> = [
  {
    name: 'sqlite',
    async open() {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-audit-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const db = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
      cleanups.push(() => db.close());
      return db;
    },
  },
];
if (pgUrl) {
  engines.push({
    name: 'postgres',
    async open() {
      const schema = await freshSchema(pgUrl);
      const pool = createPgPool(schema.url, { max: 4 });
      cleanups.push(() => schema.drop());
      cleanups.push(() => pool.end());
      const db = await openPostgresDatabase(pool);
      cleanups.push(() => db.close());
      return db;
    },
  });
}

const alice = { platform: 'slack' as const, userId: 'U0ALICE' };
const bob = { platform: 'discord' as const, userId: '100000000000000002' };
const general = { platform: 'slack' as const, channelId: 'C0GENERAL' };
const ops = { platform: 'discord' as const, channelId: '200000000000000001' };

/** A log whose clock the test sets before each record. */
async function seeded(database: OpenedDatabase, clock: ManualClock, redact?: (v: unknown) => string): Promise<AuditLog> {
  const audit = createAuditLog({ database, clock, log: silent, ...(redact && { redact }) });
  const at = (ms: number) => clock.advance(ms - clock.now());
  at(T0);
  await audit.record({ kind: 'approval', outcome: 'approved', actor: alice, conversation: general, tool: 'run_code', args: { code: 'print(1)' } });
  at(T0 + 1_000);
  await audit.record({ kind: 'access_refused', outcome: 'not_allowed', actor: bob, conversation: ops, detail: { source: 'message' } });
  at(T0 + 2_000);
  await audit.record({ kind: 'stop', outcome: 'stopped', actor: alice, conversation: general, detail: { via: 'command' } });
  at(T0 + DAY_MS);
  await audit.record({ kind: 'limit_refused', outcome: 'rate_limit', actor: alice, conversation: ops });
  at(T0 + DAY_MS + 1);
  await audit.record({ kind: 'config', outcome: 'start', detail: { configHash: 'abc' } });
  return audit;
}

describe.each(engines.filter((e) => engineWanted(e.name)))('audit table on $name', (engine) => {
  it('lists newest first with the hash of the arguments, never the arguments', async () => {
    const database = await engine.open();
    const audit = await seeded(database, new ManualClock(0));
    const { entries, total } = await audit.list({}, { limit: 50, offset: 0 });
    expect(total).toBe(5);
    expect(entries.map((e) => e.kind)).toEqual(['config', 'limit_refused', 'stop', 'access_refused', 'approval']);
    const approval = entries[4]!;
    expect(approval).toMatchObject({ at: T0, actor: 'slack:U0ALICE', channel: 'slack:C0GENERAL', tool: 'run_code', outcome: 'approved', argsHash: hashArgs({ code: 'print(1)' }) });
    // Key order does not change the hash (canonical JSON).
    expect(hashArgs({ b: 1, a: 2 })).toBe(hashArgs({ a: 2, b: 1 }));
    const raw = await database.db.selectFrom('hermes_audit').selectAll().execute();
    expect(JSON.stringify(raw)).not.toContain('print(1)');
    expect(entries[3]!.detail).toEqual({ source: 'message' });
  });

  it('filters by kind, actor, channel and time range, and pages through the rest', async () => {
    const audit = await seeded(await engine.open(), new ManualClock(0));
    const ids = async (f: Parameters<AuditLog['list']>[0]) => (await audit.list(f, { limit: 50, offset: 0 })).entries.map((e) => e.outcome);
    expect(await ids({ kind: 'stop' })).toEqual(['stopped']);
    expect(await ids({ actor: 'slack:U0ALICE' })).toEqual(['rate_limit', 'stopped', 'approved']);
    expect(await ids({ channel: 'discord:200000000000000001' })).toEqual(['rate_limit', 'not_allowed']);
    expect(await ids({ actor: 'slack:U0ALICE', channel: 'discord:200000000000000001' })).toEqual(['rate_limit']);
    // `from` inclusive, `to` exclusive.
    expect(await ids({ from: T0 + 1_000, to: T0 + DAY_MS })).toEqual(['stopped', 'not_allowed']);
    const page1 = await audit.list({}, { limit: 2, offset: 0 });
    const page2 = await audit.list({}, { limit: 2, offset: 2 });
    const page3 = await audit.list({}, { limit: 2, offset: 4 });
    expect([page1, page2, page3].map((p) => p.total)).toEqual([5, 5, 5]);
    expect([...page1.entries, ...page2.entries, ...page3.entries].map((e) => e.outcome)).toEqual(['start', 'rate_limit', 'stopped', 'not_allowed', 'approved']);
  });

  it('takes filter values as values: quotes, wildcards and SQL in them match nothing', async () => {
    const audit = await seeded(await engine.open(), new ManualClock(0));
    for (const actor of ["' OR '1'='1", 'slack:%', 'slack:U0ALICE\' --', '%', '_']) {
      expect((await audit.list({ actor }, { limit: 50, offset: 0 })).total).toBe(0);
    }
    expect((await audit.list({ channel: "x'); DROP TABLE hermes_audit; --" }, { limit: 50, offset: 0 })).total).toBe(0);
    expect((await audit.list({}, { limit: 50, offset: 0 })).total).toBe(5);
  });

  it('keeps secrets out of the detail and bounds what one row holds', async () => {
    const database = await engine.open();
    const secret = 'sk-live-0123456789abcdefABCDEF';
    const audit = createAuditLog({ database, clock: new ManualClock(T0), log: silent, redact: createRedactor([secret]) });
    await audit.record({ kind: 'admin_command', outcome: 'done'.repeat(200), actor: alice, detail: { arg: `key is ${secret}`, token: 'xoxb-whatever', big: 'x'.repeat(50_000) } });
    const [row] = await database.db.selectFrom('hermes_audit').selectAll().execute();
    expect(row!.detail).not.toContain(secret);
    expect(row!.detail).not.toContain('xoxb-whatever');
    expect(row!.detail.length).toBeLessThan(5_000);
    expect(row!.outcome.length).toBeLessThanOrEqual(200);
  });

  it('never throws into the action it records: a failed write is logged', async () => {
    const database = await engine.open();
    const mem = memoryLogger();
    const audit = createAuditLog({ database, clock: new ManualClock(T0), log: mem.log });
    await database.close();
    await expect(audit.record({ kind: 'stop', outcome: 'stopped', actor: alice })).resolves.toBeUndefined();
    expect(mem.lines().some((l) => l.msg === 'audit: could not record an event' && l.kind === 'stop')).toBe(true);
  });

  it('retention sweeps on its own timer: rows older than HERMES_AUDIT_DAYS go, newer stay (fake clock)', async () => {
    const clock = new ManualClock(0);
    const audit = await seeded(await engine.open(), clock);
    const days = 30;
    // Day 30 after T0 + 1.5 s: the three rows of T0 … T0+2 s straddle the cut-off.
    clock.advance(T0 + days * DAY_MS + 1_500 - clock.now());
    const timer = createAuditRetention({ audit, clock, log: silent, days, everyMs: 60 * 60_000 });
    timer.start();
    cleanups.push(async () => {
      timer.stop();
      await timer.idle();
    });
    await advanceUntil(clock, async () => (await audit.list({}, { limit: 50, offset: 0 })).total === 3, { stepMs: 1, maxSteps: 200 });
    expect((await audit.list({}, { limit: 50, offset: 0 })).entries.map((e) => e.outcome)).toEqual(['start', 'rate_limit', 'stopped']);
    // An hour later the next sweep runs on its own and takes the rows now past the cut-off.
    clock.advance(DAY_MS - 2_000 - 60 * 60_000);
    await advanceUntil(clock, async () => (await audit.list({}, { limit: 50, offset: 0 })).total === 2, { stepMs: 60 * 60_000, maxSteps: 5 });
    expect((await audit.list({}, { limit: 50, offset: 0 })).entries.map((e) => e.outcome)).toEqual(['start', 'rate_limit']);
  });
});
