import { afterEach, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '../../src/state/store/database.js';
import { createRateLimiter } from '../../src/gateway/access/rate-limiter.js';
import { createUsageMeter, DailyBudgetExhausted, type DailyUsage } from '../../src/state/usage/usage-meter.js';
import { createNotices, createPersonRoles } from '../../src/state/usage/access-tables.js';
import type { ModelProvider } from '../../src/runtime/provider/provider.js';
import { ManualClock } from '../reminders/manual-clock.js';
import { storeEngines, type StoreEngine } from '../helpers/store-engines.js';

/**
 * The gatekeeper's tables (migration 0010) on each engine: token counts (`hermes_usage`), rate
 * buckets (`hermes_rate`), once-per-interval notices (`hermes_notice`) and roles last seen
 * (`hermes_person_roles`).
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const engines = await storeEngines('usage', cleanups);
/** Two handles on one place: on SQLite two connections to the file, on PostgreSQL two instances. */
const open = async (engine: StoreEngine): Promise<[OpenedDatabase, OpenedDatabase]> => {
  const place = await engine.open();
  return [place.database, await place.reopen()];
};

const fakeModel = (usage: { promptTokens: number; completionTokens: number }, calls: string[]): ModelProvider => ({
  model: 'm',
  async complete() {
    calls.push('call');
    return { content: 'x', toolCalls: [], parseErrors: [], usage, finishReason: 'stop', model: 'm' };
  },
});

describe.each(engines)('gatekeeper tables on $name', (engine) => {
  it('rate: lets a burst of the limit through, refuses the next with the wait, refills one per interval', async () => {
    const [database] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    const rate = createRateLimiter({ database, clock, perMinute: 20 });
    for (let i = 0; i < 20; i++) expect((await rate.take('slack:U1')).ok).toBe(true);
    expect(await rate.take('slack:U1')).toEqual({ ok: false, retryAfterMs: 3000 });
    expect((await rate.take('slack:U2')).ok).toBe(true); // per person
    clock.advance(1000);
    expect(await rate.take('slack:U1')).toEqual({ ok: false, retryAfterMs: 2000 });
    clock.advance(2000);
    expect((await rate.take('slack:U1')).ok).toBe(true);
    expect((await rate.take('slack:U1')).ok).toBe(false);
    clock.advance(60_000); // a quiet minute fills the bucket again, never beyond it
    for (let i = 0; i < 20; i++) expect((await rate.take('slack:U1')).ok).toBe(true);
    expect((await rate.take('slack:U1')).ok).toBe(false);
  });

  it('rate: refused messages take no token, and two instances taking at once never hand out one token twice', async () => {
    const [a, b] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    const one = createRateLimiter({ database: a, clock, perMinute: 2 });
    await one.take('p');
    await one.take('p');
    for (let i = 0; i < 20; i++) expect(await one.take('p')).toEqual({ ok: false, retryAfterMs: 30_000 });
    clock.advance(30_000);
    expect((await one.take('p')).ok).toBe(true);

    const limiters = [createRateLimiter({ database: a, clock, perMinute: 10 }), createRateLimiter({ database: b, clock, perMinute: 10 })];
    const verdicts = await Promise.all(Array.from({ length: 30 }, (_, i) => limiters[i % 2]!.take('q')));
    expect(verdicts.filter((v) => v.ok)).toHaveLength(10);
  });

  it('usage: counts prompt + completion per person per UTC day, refuses the call after the line, resets at midnight', async () => {
    const [database] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 23, 0));
    const meter = createUsageMeter({ database, clock, dailyLimit: 1000 });
    const calls: string[] = [];
    const metered = meter.provider(fakeModel({ promptTokens: 400, completionTokens: 200 }, calls), { person: 'slack:U1', exempt: false });
    await metered.complete({ messages: [], tools: [] });
    await metered.complete({ messages: [], tools: [] }); // 600 → 1200: the call that crosses finishes
    const refused = await metered.complete({ messages: [], tools: [] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DailyBudgetExhausted);
    expect((refused as DailyBudgetExhausted).usage).toEqual({ used: 1200, limit: 1000, resetsAt: Date.UTC(2026, 0, 2) });
    expect(calls).toHaveLength(2);
    expect(await meter.exhausted({ person: 'slack:U2', exempt: false })).toBeUndefined();
    expect(await meter.exhausted({ person: 'slack:U1', exempt: true })).toBeUndefined();
    clock.advance(3600_000);
    expect((await meter.today('slack:U1')).used).toBe(0);
    await metered.complete({ messages: [], tools: [] });
    expect(calls).toHaveLength(3);
  });

  it('usage: lists the heaviest users of the day; an exempt payer is still counted; no charge is lost across instances', async () => {
    const [a, b] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 9));
    // Two instances: on SQLite (which refuses a second instance on its file) as a test stand-in only.
    const meter = createUsageMeter({ database: a, clock, dailyLimit: 10, loneWriter: false });
    const other = createUsageMeter({ database: b, clock, dailyLimit: 10, loneWriter: false });
    const calls: string[] = [];
    await meter.provider(fakeModel({ promptTokens: 50, completionTokens: 0 }, calls), { person: 'discord:7', exempt: true }).complete({ messages: [], tools: [] });
    await meter.charge('slack:U1', { promptTokens: 3, completionTokens: 4 });
    await other.charge('slack:U2', { promptTokens: 20, completionTokens: 1 });
    await meter.charge('slack:U1', { promptTokens: 1, completionTokens: 0 });
    expect(await meter.top(2)).toEqual([{ person: 'discord:7', used: 50 }, { person: 'slack:U2', used: 21 }]);
    expect(await other.top(10)).toHaveLength(3);
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? meter : other).charge('slack:U3', { promptTokens: 2, completionTokens: 1 })));
    expect((await meter.today('slack:U3')).used).toBe(120);
  });

  it("usage: a shared budget counts everyone's calls; the bot-wide warning is given once a day across instances; days past are swept", async () => {
    const [a, b] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 9));
    const warnings: DailyUsage[] = [];
    const bot = { key: 'bot', limit: 100, scope: 'bot' as const };
    const meters = [a, b].map((database) => createUsageMeter({ database, clock, dailyLimit: 0, loneWriter: false, onBotWarning: (u) => void warnings.push(u) }));
    const calls: string[] = [];
    const metered = meters.map((m, i) => m.provider(fakeModel({ promptTokens: 30, completionTokens: 0 }, calls), { person: `slack:U${i}`, exempt: true, pools: [bot] }));
    await metered[0]!.complete({ messages: [], tools: [] });
    await metered[1]!.complete({ messages: [], tools: [] });
    expect(warnings).toEqual([]);
    await metered[1]!.complete({ messages: [], tools: [] }); // 90: crosses 80
    await metered[0]!.complete({ messages: [], tools: [] }); // 120: refused from now on
    expect(warnings).toEqual([{ scope: 'bot', used: 90, limit: 100, resetsAt: Date.UTC(2026, 0, 2) }]);
    expect(await meters[0]!.poolToday(bot)).toMatchObject({ used: 120, limit: 100 });
    expect(await metered[1]!.complete({ messages: [], tools: [] }).catch((e: unknown) => e)).toBeInstanceOf(DailyBudgetExhausted);
    // The next day starts from zero and warns again; three days on, the first day's rows are gone.
    clock.advance(86_400_000);
    for (let i = 0; i < 3; i++) await metered[0]!.complete({ messages: [], tools: [] });
    expect(warnings).toHaveLength(2);
    clock.advance(3 * 86_400_000);
    await metered[1]!.complete({ messages: [], tools: [] });
    const days = await b.db.selectFrom('hermes_usage').select('day').distinct().orderBy('day').execute();
    expect(days.map((d) => d.day)).toEqual(['2026-01-02', '2026-01-05']);
  });

  it('usage: a lone writer (SQLite) reads a counter once a day and keeps it exact; several instances read it at every check', async () => {
    const [database] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 9));
    const reads: string[] = [];
    database.stats.onQuery = (sql) => {
      if (/^select .* from "hermes_usage"/.test(sql)) reads.push(sql);
    };
    const meter = createUsageMeter({ database, clock, dailyLimit: 1000 });
    const payer = { person: 'slack:U1', exempt: false };
    // A charge issued while the first check is still reading is counted once, after the read.
    const [first] = await Promise.all([meter.exhausted(payer), meter.charge('slack:U1', { promptTokens: 100, completionTokens: 0 })]);
    expect(first).toBeUndefined();
    expect((await meter.today('slack:U1')).used).toBe(100);
    await Promise.all(Array.from({ length: 8 }, () => meter.charge('slack:U1', { promptTokens: 100, completionTokens: 0 })));
    expect(await meter.exhausted(payer)).toBeUndefined();
    expect((await meter.today('slack:U1')).used).toBe(900);
    await meter.charge('slack:U1', { promptTokens: 60, completionTokens: 40 });
    expect(await meter.exhausted(payer)).toEqual({ used: 1000, limit: 1000, resetsAt: Date.UTC(2026, 0, 2) });
    // Lone: one read for the person's day, however many checks; several instances: one per check.
    expect(reads).toHaveLength(engine.name === 'sqlite' ? 1 : 5);
    // A restart (a new meter) reads what was written; a new day starts from the table again.
    const again = createUsageMeter({ database, clock, dailyLimit: 1000 });
    expect((await again.today('slack:U1')).used).toBe(1000);
    clock.advance(86_400_000);
    expect((await meter.today('slack:U1')).used).toBe(0);
    database.stats.onQuery = undefined;
  });

  it("usage: a charge handed to the caller's settleWith is written with the caller's writes (one commit on SQLite)", async () => {
    const [database] = await open(engine);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 9));
    const meter = createUsageMeter({ database, clock, dailyLimit: 1000 });
    const calls: string[] = [];
    const bot = { key: 'bot', limit: 10_000, scope: 'bot' as const };
    const metered = meter.provider(fakeModel({ promptTokens: 30, completionTokens: 5 }, calls), { person: 'slack:U1', exempt: false, pools: [bot] });
    await metered.complete({ messages: [], tools: [] }); // the day's first charge also sweeps: not measured
    const held: Array<Promise<unknown>> = [];
    const commits = database.stats.commits ?? 0;
    await metered.complete({ messages: [], tools: [], settleWith: (w) => void held.push(w) });
    expect(held).toHaveLength(1);
    // The caller's own write, in the same event-loop turn, awaited with the charge.
    await Promise.all([database.db.insertInto('hermes_notice').values({ key: 'step', until: 1 }).execute(), ...held]);
    if (engine.name === 'sqlite') expect((database.stats.commits ?? 0) - commits).toBe(1);
    expect((await meter.today('slack:U1')).used).toBe(70);
    expect((await meter.poolToday(bot)).used).toBe(70);
    // Without settleWith the call returns once its charge is written.
    await metered.complete({ messages: [], tools: [] });
    const rows = await database.db.selectFrom('hermes_usage').select(['kind', 'tokens']).where('subject', 'in', ['slack:U1', 'bot']).orderBy('kind').execute();
    expect(rows.map((r) => [r.kind, Number(r.tokens)])).toEqual([['person', 105], ['pool', 105]]);
    expect(calls).toHaveLength(3);
  });

  it('notices: one claim per interval, across instances; rows past their time are swept by it', async () => {
    const [a, b] = await open(engine);
    let t = 1_000_000;
    const notices = [createNotices(a, () => t), createNotices(b, () => t)];
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => notices[i % 2]!.claim('access:slack:U1', 60_000)));
    expect(first.filter(Boolean)).toHaveLength(1);
    expect(await notices[1]!.claim('access:slack:U2', 60_000)).toBe(true);
    t += 59_999;
    expect(await notices[0]!.claim('access:slack:U1', 60_000)).toBe(false);
    t += 1;
    expect(await notices[1]!.claim('access:slack:U1', 60_000)).toBe(true);
    // An hour on, the next claim sweeps what ended.
    t += 3_600_000;
    expect(await notices[0]!.claim('access:slack:U3', 60_000)).toBe(true);
    expect((await a.db.selectFrom('hermes_notice').select('key').execute()).map((r) => r.key)).toEqual(['access:slack:U3']);
  });

  it('roles: the last set wins and is read by another instance', async () => {
    const [a, b] = await open(engine);
    const roles = [createPersonRoles(a, () => 1), createPersonRoles(b, () => 2)];
    expect(await roles[0]!.get('discord:1')).toBeUndefined();
    await roles[0]!.set('discord:1', ['r1', 'r2']);
    expect(await roles[1]!.get('discord:1')).toEqual(['r1', 'r2']);
    await roles[1]!.set('discord:1', []);
    expect(await roles[0]!.get('discord:1')).toEqual([]);
  });
});
