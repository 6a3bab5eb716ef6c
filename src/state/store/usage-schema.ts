import { sql, type Kysely, type Migration } from 'kysely';
import { isPostgres } from './recall-schema.js';

/**
 * Step 0015: a model call's token charge rides on the history append that writes the call's
 * outcome. A step of a turn appends what the model said right after the call, and the usage meter
 * wrote its charge (an upsert into `hermes_usage`) as a statement of its own beside it; now the
 * append carries the charge as JSON in `hermes_message.charge` (built by usage-meter.ts, opaque to
 * the session store), and this trigger adds it to the counter inside the append's own statement.
 * So the message and what it cost land together or not at all, and the counter is the same
 * atomic `tokens = tokens + excluded.tokens` every instance adds with. The column is cleared as it
 * is read (always NULL when read back). The JSON is an array of rows `{day, kind, subject, tokens}`.
 *
 * PostgreSQL: a `before insert` row trigger, so the history row is stored with the column empty.
 * SQLite: an `after insert` trigger that empties the column of the row just written.
 */
export const usageChargeStep: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('hermes_message').addColumn('charge', 'text').execute();
    if (isPostgres(db)) {
      await sql`create function hermes_usage_charge() returns trigger language plpgsql as $$
        begin
          if new.charge is null then return new; end if;
          insert into hermes_usage (day, kind, subject, tokens)
            select c->>'day', c->>'kind', c->>'subject', (c->>'tokens')::double precision
            from jsonb_array_elements(new.charge::jsonb) c
            on conflict (day, kind, subject) do update set tokens = hermes_usage.tokens + excluded.tokens;
          new.charge := null;
          return new;
        end $$`.execute(db);
      await sql`create trigger hermes_usage_charge before insert on hermes_message
        for each row execute function hermes_usage_charge()`.execute(db);
      return;
    }
    // `where true`: SQLite reads an upsert after `insert … select` only with a where clause.
    await sql`create trigger hermes_usage_charge after insert on hermes_message
      when new.charge is not null
      begin
        insert into hermes_usage (day, kind, subject, tokens)
          select json_extract(value, '$.day'), json_extract(value, '$.kind'), json_extract(value, '$.subject'), json_extract(value, '$.tokens')
          from json_each(new.charge) where true
          on conflict (day, kind, subject) do update set tokens = hermes_usage.tokens + excluded.tokens;
        update hermes_message set charge = null where rowid = new.rowid;
      end`.execute(db);
  },
};
