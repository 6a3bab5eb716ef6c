import { sql } from 'kysely';
import { reusableQuery, type OpenedDatabase } from '../store/database.js';

/**
 * The small access records the gatekeeper keeps, in tables (migration 0010): once-per-interval
 * notices (`hermes_notice`), HERMES_USER_RATE's buckets (`hermes_rate`) and the roles last seen
 * for a person (`hermes_person_roles`). Each change is one statement, atomic across instances;
 * what expires has an indexed time column, swept at most once an hour by the writes themselves.
 */

const SWEEP_EVERY_MS = 60 * 60 * 1000;

/** A sweep run at most once per SWEEP_EVERY_MS, from whichever write comes along. */
function hourly(now: () => number, run: (at: number) => Promise<unknown>): () => Promise<void> {
  let last = now();
  return async () => {
    const at = now();
    if (at - last < SWEEP_EVERY_MS) return;
    last = at;
    await run(at);
  };
}

export interface Notices {
  /** True for the one caller that may give the notice `key` now; it is not due again for `forMs`. */
  claim(key: string, forMs: number): Promise<boolean>;
}

export function createNotices(database: OpenedDatabase, now: () => number): Notices {
  const { db } = database;
  const sweep = hourly(now, (at) => db.deleteFrom('hermes_notice').where('until', '<=', at).execute());
  return {
    async claim(key, forMs) {
      const at = now();
      // Inserted, or taken over once the last notice's interval is over: a row comes back only then.
      const row = await db
        .insertInto('hermes_notice')
        .values({ key, until: at + forMs })
        .onConflict((c) => c.column('key').doUpdateSet({ until: at + forMs }).where('hermes_notice.until', '<=', at))
        .returning('key')
        .executeTakeFirst();
      await sweep();
      return row !== undefined;
    },
  };
}

export type RateVerdict = { ok: true } | { ok: false; retryAfterMs: number };

export interface RateBuckets {
  /**
   * Takes one token from `person`'s bucket (`interval` ms per token, a full bucket lets
   * `burstSlack / interval + 1` through at once), or says how long until one is free.
   */
  take(person: string, interval: number, burstSlack: number): Promise<RateVerdict>;
}

/**
 * The bucket is the time it is full again (GCRA's theoretical arrival time); no row = full. One
 * conditional upsert takes a token: it moves `full_at` on only while the bucket has room, so two
 * instances never hand out the same token and a refused message takes none.
 */
export function createRateBuckets(database: OpenedDatabase, now: () => number): RateBuckets {
  const { db } = database;
  const sweep = hourly(now, (at) => db.deleteFrom('hermes_rate').where('full_at', '<=', at).execute());
  // Run for every message a person sends: built and compiled once (query building was most of its CPU).
  const takeToken = reusableQuery<'person' | 'fullAt' | 'at' | 'interval' | 'until', { full_at: number }>(db, (v) =>
    db
      .insertInto('hermes_rate')
      .values({ person: v('person'), full_at: v<number>('fullAt') })
      .onConflict((c) =>
        c
          .column('person')
          .doUpdateSet({ full_at: sql<number>`(case when hermes_rate.full_at > ${v('at')} then hermes_rate.full_at else ${v('at')} end) + ${v('interval')}` })
          .where('hermes_rate.full_at', '<=', v<number>('until')),
      )
      .returning('full_at'),
  );
  return {
    async take(person, interval, burstSlack) {
      const at = now();
      const { rows } = await takeToken({ person, fullAt: at + interval, at, interval, until: at + burstSlack });
      await sweep();
      if (rows.length > 0) return { ok: true };
      const cur = await db.selectFrom('hermes_rate').select('full_at').where('person', '=', person).executeTakeFirst();
      const fullAt = Number(cur?.full_at ?? at);
      return { ok: false, retryAfterMs: Math.max(1, Math.ceil(fullAt - at - burstSlack)) };
    },
  };
}

export interface PersonRoles {
  get(person: string): Promise<string[] | undefined>;
  set(person: string, roles: readonly string[]): Promise<void>;
}

export function createPersonRoles(database: OpenedDatabase, now: () => number): PersonRoles {
  const { db } = database;
  return {
    async get(person) {
      const row = await db.selectFrom('hermes_person_roles').select('roles').where('person', '=', person).executeTakeFirst();
      return row ? (JSON.parse(row.roles) as string[]) : undefined;
    },
    async set(person, roles) {
      const row = { person, roles: JSON.stringify(roles), seen_at: now() };
      await db.insertInto('hermes_person_roles').values(row).onConflict((c) => c.column('person').doUpdateSet({ roles: row.roles, seen_at: row.seen_at })).execute();
    },
  };
}
