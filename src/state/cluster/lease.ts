import type pg from 'pg';

/**
 * Named leases in PostgreSQL (`hermes_lease`): at most one live holder per name, expiring in
 * database time (`now()`), so instances whose clocks disagree still agree on who holds it. A
 * holder renews well before expiry; a holder that dies simply stops renewing, and after the
 * expiry anyone may take the lease over. A clean release deletes the row, so "the row was there,
 * expired, with another holder" means exactly "its holder died (or stalled) while holding it".
 */
export type Acquired = { acquired: false } | { acquired: true; takenOver: boolean };

export interface Leases {
  /** Takes the lease if it is free or expired. `takenOver`: it was left behind by another holder. */
  acquire(name: string, ttlMs: number): Promise<Acquired>;
  /** Extends a lease this holder still has; false when it was lost (expired and taken). */
  renew(name: string, ttlMs: number): Promise<boolean>;
  release(name: string): Promise<void>;
  /** The live holder's id, if any. */
  holder(name: string): Promise<string | undefined>;
}

export function createLeases(pool: pg.Pool, holderId: string): Leases {
  return {
    async acquire(name, ttlMs) {
      const res = await pool.query<{ previous: string | null }>(
        `WITH prev AS (SELECT holder FROM hermes_lease WHERE name = $1)
         INSERT INTO hermes_lease (name, holder, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
           WHERE hermes_lease.expires_at < now() OR hermes_lease.holder = excluded.holder
         RETURNING (SELECT holder FROM prev) AS previous`,
        [name, holderId, ttlMs],
      );
      const row = res.rows[0];
      if (!row) return { acquired: false };
      return { acquired: true, takenOver: row.previous !== null && row.previous !== holderId };
    },
    async renew(name, ttlMs) {
      const res = await pool.query(
        "UPDATE hermes_lease SET expires_at = now() + $3 * interval '1 millisecond' WHERE name = $1 AND holder = $2",
        [name, holderId, ttlMs],
      );
      return res.rowCount === 1;
    },
    async release(name) {
      await pool.query('DELETE FROM hermes_lease WHERE name = $1 AND holder = $2', [name, holderId]);
    },
    async holder(name) {
      const res = await pool.query<{ holder: string }>('SELECT holder FROM hermes_lease WHERE name = $1 AND expires_at >= now()', [name]);
      return res.rows[0]?.holder;
    },
  };
}
