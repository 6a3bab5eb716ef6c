import { sql, type Kysely, type Migration } from 'kysely';
import { isPostgres } from './recall-schema.js';

/** What the start of a conversation's first session says when the conversation has a live session already. */
export const SESSION_TAKEN = 'hermes: the conversation has a live session already';

/**
 * Step 0012: a conversation's first session starts in one statement. `hermes_session_start` is a
 * view nothing is stored in; inserting a row into it (id, conversation_key, created_at, joined)
 * runs a trigger that writes the session row and points the conversation at it, only if the
 * conversation points at no session yet. If it does (another instance, or this one, started one
 * first), the statement fails with SESSION_TAKEN and writes nothing: no session row is left
 * behind for nothing to point at, and the caller reads the one that is there. It was two
 * statements (session row, then the pointer) and a third to delete the row when the race was lost.
 * `joined` = 1 also marks the conversation joined, as the pointer's statement did.
 */
export const sessionStartStep: Migration = {
  async up(db: Kysely<unknown>) {
    const session = `insert into hermes_session (id, conversation_key, created_at, summary, summarized_up_to, archived_at)
      values (new.id, new.conversation_key, new.created_at, null, 0, null);`;
    const point = `insert into hermes_conversation (key, current_session, joined) values (new.conversation_key, new.id, new.joined)
      on conflict (key) do update set current_session = excluded.current_session,
        joined = case when excluded.joined = 1 then 1 else hermes_conversation.joined end
      where hermes_conversation.current_session is null;`;
    if (isPostgres(db)) {
      await sql`create view hermes_session_start as
        select id, conversation_key, created_at, 0 as joined from hermes_session where false`.execute(db);
      await sql`create function hermes_session_start() returns trigger language plpgsql as $$
        begin
          ${sql.raw(session)}
          ${sql.raw(point)}
          if not found then raise exception '${sql.raw(SESSION_TAKEN)}'; end if;
          return new;
        end $$`.execute(db);
      await sql`create trigger hermes_session_start instead of insert on hermes_session_start
        for each row execute function hermes_session_start()`.execute(db);
      return;
    }
    await sql`create view hermes_session_start as
      select id, conversation_key, created_at, 0 as joined from hermes_session where 0`.execute(db);
    // RAISE(ABORT) undoes this statement's own writes (the session row) and nothing else.
    await sql`create trigger hermes_session_start instead of insert on hermes_session_start
      begin
        ${sql.raw(session)}
        ${sql.raw(point)}
        select raise(abort, '${sql.raw(SESSION_TAKEN)}')
          where (select current_session from hermes_conversation where key = new.conversation_key) is not new.id;
      end`.execute(db);
  },
};
