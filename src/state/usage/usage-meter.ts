import type { Clock } from '../../basics/clock.js';
import type { CarriedCharge, ModelProvider } from '../../runtime/provider/provider.js';
import { reusableQuery, type OpenedDatabase } from '../store/database.js';
import { createNotices } from './access-tables.js';
import type { TokenUsage } from '../../basics/types.js';

/**
 * HERMES_USER_DAILY_TOKENS: prompt + completion tokens per person per UTC day, in `hermes_usage`
 * (one row per day and person or shared budget, added to by one atomic upsert) so every instance
 * adds to the same counter and a restart forgets nothing. Rows of days past are swept by their
 * (indexed) day, once a day per process.
 *
 * `provider()` is THE place where tokens are counted and the budget enforced: every model call made
 * on someone's behalf (turn steps, running summaries, sub-agents) goes through the provider it
 * returns. A call is refused before it starts once the person's day is used up; the call that
 * crosses the line is allowed to finish (its cost is unknown until it answers).
 *
 * A lone writer (SQLite: the file is this process's alone, sqlite-owner-lock.ts) keeps today's
 * counters in memory as well: each is read from the table once per process and day, then every
 * charge adds to it as it writes the row, so checking a budget before a step reads nothing and is
 * still exact (no other process writes the file). The row is written all the same, by the same
 * upsert, so a restart and `/hermes status` read the same count. Several instances (PostgreSQL)
 * read the row at every check, since another instance may have added to it.
 */

export interface DailyUsage {
  /** Whose budget: the person's (HERMES_USER_DAILY_TOKENS, the default), the channel's (`daily_tokens`) or the whole bot's (HERMES_DAILY_TOKENS). */
  scope?: BudgetScope;
  used: number;
  /** 0 = no daily limit. */
  limit: number;
  /** Start of the next UTC day, when the count starts again. */
  resetsAt: number;
}

/** Thrown by a metered provider instead of calling the model. */
export class DailyBudgetExhausted extends Error {
  constructor(readonly usage: DailyUsage) {
    super(`daily token budget used up (${usage.used} of ${usage.limit})`);
    this.name = 'DailyBudgetExhausted';
  }
}

export type BudgetScope = 'user' | 'channel' | 'bot';

/**
 * A budget shared by many people: a channel's `daily_tokens` or the bot's HERMES_DAILY_TOKENS.
 * Pools hold for everyone, admins included (only the per-person limit exempts admins).
 */
export interface Pool {
  /** Counter name, e.g. `channel:slack:C123` or `bot`. */
  key: string;
  limit: number;
  scope: Exclude<BudgetScope, 'user'>;
}

/** Who a model call is for. Admins are counted but never refused by their own limit. */
export interface Payer {
  person: string;
  exempt: boolean;
  /** Shared budgets this call also counts against (checked first, for everyone). */
  pools?: readonly Pool[];
}

/** Told once per UTC day when the bot-wide budget crosses this share. */
export const BOT_WARN_SHARE = 0.8;

export interface UsageMeter {
  readonly dailyLimit: number;
  today(person: string): Promise<DailyUsage>;
  /** The usage when `payer` may not start another model call today, else undefined. */
  exhausted(payer: Payer): Promise<DailyUsage | undefined>;
  charge(person: string, usage: TokenUsage): Promise<void>;
  /** Today's count of a shared budget. */
  poolToday(pool: Pool): Promise<DailyUsage>;
  /** `base` with the budget checked before each call and the tokens charged after it. */
  provider(base: ModelProvider, payer: Payer): ModelProvider;
  /** The people who used most tokens today, most first (at most `n`). */
  top(n: number): Promise<Array<{ person: string; used: number }>>;
}

const DAY_MS = 86_400_000;
/** Counters a lone writer keeps in memory for the day; past it they are read from the table again. */
const COUNTERS_MAX = 50_000;
/** Counters outlive their day a little, for `/hermes status` around midnight and late charges. */
const COUNTER_TTL_MS = 3 * DAY_MS;

export const utcDay = (t: number): string => new Date(t).toISOString().slice(0, 10);
const nextUtcMidnight = (t: number): number => (Math.floor(t / DAY_MS) + 1) * DAY_MS;

export function createUsageMeter(deps: {
  database: OpenedDatabase;
  clock: Clock;
  dailyLimit: number;
  /** Called once per UTC day (across instances) when the bot-wide pool first reaches BOT_WARN_SHARE of its limit. */
  onBotWarning?(usage: DailyUsage): void;
  /**
   * No other process writes the counters (default: on SQLite, whose file this process owns), so
   * they may be kept in memory. Tests that open one SQLite file twice to stand for two instances
   * set it false.
   */
  loneWriter?: boolean;
}): UsageMeter {
  const { clock, dailyLimit } = deps;
  const { db } = deps.database;
  const notices = createNotices(deps.database, () => clock.now());
  const lone = deps.loneWriter ?? deps.database.dialect === 'sqlite';
  let sweptOn: string | undefined;
  /** A lone writer's counters of one UTC day, by kind and subject, and the reads filling them. */
  let memo: { day: string; counts: Map<string, number>; loading: Map<string, Promise<number>> } | undefined;
  const counters = (day: string) => (memo?.day === day ? memo : (memo = { day, counts: new Map(), loading: new Map() }));

  // Both run at every model call (the upsert) or check (the read): built and compiled once, as
  // building the upsert was over half of Kysely's share of a step's CPU profile.
  const selectTokens = reusableQuery<'day' | 'kind' | 'subject', { tokens: number }>(db, (v) =>
    db.selectFrom('hermes_usage').select('tokens').where('day', '=', v('day')).where('kind', '=', v<'person' | 'pool'>('kind')).where('subject', '=', v('subject')),
  );
  const addTokens = reusableQuery<'day' | 'kind' | 'subject' | 'tokens', { tokens: number }>(db, (v) =>
    db
      .insertInto('hermes_usage')
      .values({ day: v('day'), kind: v<'person' | 'pool'>('kind'), subject: v('subject'), tokens: v<number>('tokens') })
      .onConflict((c) => c.columns(['day', 'kind', 'subject']).doUpdateSet({ tokens: (eb) => eb('hermes_usage.tokens', '+', eb.ref('excluded.tokens')) }))
      .returning('tokens'),
  );

  async function readRow(day: string, kind: 'person' | 'pool', subject: string): Promise<number> {
    const { rows } = await selectTokens({ day, kind, subject });
    return Number(rows[0]?.tokens ?? 0);
  }

  function read(day: string, kind: 'person' | 'pool', subject: string): Promise<number> {
    if (!lone) return readRow(day, kind, subject);
    const m = counters(day);
    const key = `${kind}:${subject}`;
    const known = m.counts.get(key);
    if (known !== undefined) return Promise.resolve(known);
    let loading = m.loading.get(key);
    if (!loading) {
      loading = readRow(day, kind, subject)
        .then((n) => {
          if (m.counts.size >= COUNTERS_MAX) m.counts.clear();
          m.counts.set(key, n);
          return n;
        })
        .finally(() => m.loading.delete(key));
      m.loading.set(key, loading);
    }
    return loading;
  }

  /**
   * Adds `tokens` to a counter and returns the new total, atomically for every instance. The
   * upsert is issued before the first await unless the counter is being read (rare: a charge
   * while its first check is still reading), so it joins the writes of the same event-loop turn.
   */
  async function add(day: string, kind: 'person' | 'pool', subject: string, tokens: number): Promise<number> {
    if (lone) {
      const reading = countInMemory(day, kind, subject, tokens);
      if (reading) await reading;
    }
    const upsert = addTokens({ day, kind, subject, tokens });
    const [{ rows }] = await Promise.all([upsert, sweepOnce(day)]);
    const row = rows[0];
    if (!row) throw new Error(`the token count ${kind}:${subject} was not written`);
    return Number(row.tokens);
  }

  /**
   * A lone writer's counter in memory takes the charge now, or, while the counter is being read,
   * once the read is back: the read cannot have seen this charge (one connection, in order). Not
   * in memory: the row will have it, and a later read loads it from there.
   */
  function countInMemory(day: string, kind: 'person' | 'pool', subject: string, tokens: number): Promise<void> | undefined {
    const m = counters(day);
    const key = `${kind}:${subject}`;
    const bump = () => {
      const known = m.counts.get(key);
      if (known !== undefined) m.counts.set(key, known + tokens);
    };
    const loading = m.loading.get(key);
    if (!loading) return void bump();
    return loading.then(bump, bump);
  }

  /** The first charge of a day in this process sweeps the days past keeping (one statement a day). */
  function sweepOnce(day: string): Promise<unknown> | undefined {
    if (sweptOn === day) return undefined;
    sweptOn = day;
    return db.deleteFrom('hermes_usage').where('day', '<', utcDay(clock.now() - COUNTER_TTL_MS)).execute();
  }

  /**
   * The person's charge for a caller that writes it with its history append (ModelRequest
   * carryCharge): counted in memory now, as add() does, and written by the append's statement
   * (schema step 0015's trigger), the same upsert by another road; or by `write()`.
   */
  function carried(person: string, tokens: number): CarriedCharge {
    const day = utcDay(clock.now());
    if (lone) void countInMemory(day, 'person', person, tokens);
    let written = false;
    return {
      row: JSON.stringify([{ day, kind: 'person', subject: person, tokens }]),
      async write() {
        if (written) return;
        written = true;
        await addTokens({ day, kind: 'person', subject: person, tokens });
      },
    };
  }

  async function poolToday(pool: Pool): Promise<DailyUsage> {
    const now = clock.now();
    const used = await read(utcDay(now), 'pool', pool.key);
    return { scope: pool.scope, used, limit: pool.limit, resetsAt: nextUtcMidnight(now) };
  }

  async function chargePools(pools: readonly Pool[], tokens: number): Promise<void> {
    const now = clock.now();
    const day = utcDay(now);
    // Issued together, so they commit together.
    const totals = await Promise.all(pools.map((pool) => add(day, 'pool', pool.key, tokens)));
    for (const [i, pool] of pools.entries()) {
      const total = totals[i]!;
      const mark = pool.limit * BOT_WARN_SHARE;
      if (pool.scope !== 'bot' || !deps.onBotWarning || total < mark || total - tokens >= mark) continue;
      // The charge that crosses the mark; the notice row makes it once a day across instances too.
      if (await notices.claim(`usage:bot-warned:${day}`, COUNTER_TTL_MS)) {
        deps.onBotWarning({ scope: 'bot', used: total, limit: pool.limit, resetsAt: nextUtcMidnight(now) });
      }
    }
  }

  async function today(person: string): Promise<DailyUsage> {
    const now = clock.now();
    const used = await read(utcDay(now), 'person', person);
    return { used, limit: dailyLimit, resetsAt: nextUtcMidnight(now) };
  }

  async function exhausted(payer: Payer): Promise<DailyUsage | undefined> {
    for (const pool of payer.pools ?? []) {
      if (pool.limit <= 0) continue;
      const usage = await poolToday(pool);
      if (usage.used >= usage.limit) return usage;
    }
    if (dailyLimit === 0 || payer.exempt) return undefined;
    const usage = await today(payer.person);
    return usage.used >= usage.limit ? usage : undefined;
  }

  async function charge(person: string, usage: TokenUsage): Promise<void> {
    const tokens = Math.max(0, Math.round(usage.promptTokens + usage.completionTokens));
    if (tokens === 0) return;
    await add(utcDay(clock.now()), 'person', person, tokens);
  }

  return {
    dailyLimit,
    today,
    exhausted,
    charge,
    poolToday,
    provider(base, payer) {
      return {
        get model() {
          return base.model;
        },
        async complete(request) {
          const over = await exhausted(payer);
          if (over) throw new DailyBudgetExhausted(over);
          const response = await base.complete(request);
          const tokens = Math.max(0, Math.round(response.usage.promptTokens + response.usage.completionTokens));
          const pools = tokens > 0 && payer.pools?.length ? chargePools(payer.pools, tokens) : undefined;
          // The person's charge rides on the caller's history append when it takes it (one statement
          // fewer per step); the pools' are written here, since a crossing of the bot's warning mark
          // needs the total the upsert hands back.
          let person: Promise<unknown>;
          if (request.carryCharge && tokens > 0) {
            request.carryCharge(carried(payer.person, tokens));
            person = Promise.resolve(sweepOnce(utcDay(clock.now())));
          } else person = charge(payer.person, response.usage);
          // The person's and the pools' counters at once: one commit, with the caller's writes when it takes them.
          const charged = Promise.all([person, pools]);
          if (request.settleWith) request.settleWith(charged);
          else await charged;
          return response;
        },
      };
    },
    async top(n) {
      const rows = await db
        .selectFrom('hermes_usage')
        .select(['subject', 'tokens'])
        .where('day', '=', utcDay(clock.now()))
        .where('kind', '=', 'person')
        .orderBy('tokens', 'desc')
        .orderBy('subject')
        .limit(Math.max(0, n))
        .execute();
      return rows.map((r) => ({ person: r.subject, used: Number(r.tokens) }));
    },
  };
}
