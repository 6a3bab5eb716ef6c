import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * The recall tables (search_conversations, embeddings, channel notes), one migration step.
 *
 * - `hermes_recall_message`: every message the bot accepted or answered, with where and when; `seq` is
 *   the integer key full-text search joins on.
 * - `hermes_recall_message_fts` (SQLite: an FTS5 table over `hermes_recall_message.text`, external content, rows
 *   written with the message in one transaction) / `hermes_recall_message.tsv` (PostgreSQL: a generated
 *   tsvector column with a GIN index). The one place the two engines differ here.
 * - `hermes_recall_member`: who took part where (a person's own message makes them a member of
 *   that channel and thread). Search joins on it, so visibility is decided by the database, not
 *   by filtering afterwards.
 * - `hermes_embedding`: one vector per message or fact, when an embedding model is set.
 * - `hermes_channel_note`: the standing notes of a channel.
 */
export const recallTablesStep: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = isPostgres(db);
    await db.schema
      .createTable('hermes_recall_message')
      .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) => c.primaryKey().notNull())
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('platform', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('channel_id', 'text', (c) => c.notNull())
      // '' for a top-level post: the membership join compares text, never NULL.
      .addColumn('thread_id', 'text', (c) => c.notNull())
      .addColumn('parent_channel_id', 'text')
      // The person whose DM it is (speaker key); NULL outside DMs.
      .addColumn('dm_owner', 'text')
      // Speaker key of the writer; 'bot' for the bot's answers.
      .addColumn('author', 'text', (c) => c.notNull())
      .addColumn('author_name', 'text')
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('at', 'double precision', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('hermes_recall_message_place').on('hermes_recall_message').columns(['platform', 'workspace_id', 'channel_id', 'thread_id', 'at']).execute();
    await db.schema.createIndex('hermes_recall_message_dm').on('hermes_recall_message').columns(['dm_owner', 'at']).execute();
    if (postgres) {
      await sql`alter table hermes_recall_message add column tsv tsvector generated always as (to_tsvector('english', text)) stored`.execute(db);
      await sql`create index hermes_recall_message_tsv on hermes_recall_message using gin (tsv)`.execute(db);
    } else {
      await sql`create virtual table hermes_recall_message_fts using fts5(text, content='hermes_recall_message', content_rowid='seq', tokenize='porter unicode61')`.execute(db);
    }

    await db.schema
      .createTable('hermes_recall_member')
      .addColumn('member', 'text', (c) => c.notNull())
      .addColumn('platform', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('channel_id', 'text', (c) => c.notNull())
      .addColumn('thread_id', 'text', (c) => c.notNull())
      .addColumn('since', 'double precision', (c) => c.notNull())
      .addPrimaryKeyConstraint('hermes_recall_member_pk', ['platform', 'workspace_id', 'channel_id', 'thread_id', 'member'])
      .execute();
    await db.schema.createIndex('hermes_recall_member_by').on('hermes_recall_member').columns(['member']).execute();

    await db.schema
      .createTable('hermes_embedding')
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('ref', 'text', (c) => c.notNull())
      .addColumn('owner', 'text')
      .addColumn('model', 'text', (c) => c.notNull())
      // Float32 values, base64: the same text column on both engines.
      .addColumn('vector', 'text', (c) => c.notNull())
      .addColumn('at', 'double precision', (c) => c.notNull())
      .addPrimaryKeyConstraint('hermes_embedding_pk', ['kind', 'ref'])
      .execute();
    await db.schema.createIndex('hermes_embedding_owner').on('hermes_embedding').columns(['kind', 'owner']).execute();

    await db.schema
      .createTable('hermes_channel_note')
      .addColumn('platform', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('channel_id', 'text', (c) => c.notNull())
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('set_by', 'text', (c) => c.notNull())
      .addColumn('set_at', 'double precision', (c) => c.notNull())
      .addPrimaryKeyConstraint('hermes_channel_note_pk', ['platform', 'workspace_id', 'channel_id'])
      .execute();
  },
};

/**
 * SQLite: the full-text row is written by a trigger on the message's insert, inside that one
 * statement, so recording a message needs no transaction of its own (PostgreSQL's tsvector column
 * is generated the same way already). Messages are never updated or deleted here.
 */
export const recallFtsTriggerStep: Migration = {
  async up(db: Kysely<unknown>) {
    if (isPostgres(db)) return;
    await sql`create trigger hermes_recall_message_fts_add after insert on hermes_recall_message
      begin insert into hermes_recall_message_fts(rowid, text) values (new.seq, new.text); end`.execute(db);
  },
};

export function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * Where each stored message may be seen, as one word both engines index (`place`): the visibility
 * rule becomes an index lookup that narrows the full-text matches before they are ranked. Without
 * it a common word matched tens of thousands of messages, each ranked and then checked against the
 * rule (p95 148 ms on SQLite, 160 ms on PostgreSQL over 100,000 messages). The rule itself is still
 * checked in the query on what is left (message-index.ts); the word only finds the candidates.
 * (Step 0009: after 0008's full-text trigger, which it replaces with one that writes the place too.)
 *
 * SQLite: the FTS5 table is rebuilt with a second column, `place`, so one MATCH intersects the
 * words with the person's places. PostgreSQL: a btree index on `place`.
 */
export const recallPlaceStep: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = isPostgres(db);
    await db.schema.alterTable('hermes_recall_message').addColumn('place', 'text', (c) => c.notNull().defaultTo('')).execute();
    // The same words the app writes (placeWord in message-index.ts): 'p' + hex(UTF-8 of the key) + '0'.
    const key = sql`case when dm_owner is not null then 'd|' || dm_owner
      when thread_id = '' then 'c|' || platform || '|' || workspace_id || '|' || channel_id
      else 't|' || platform || '|' || workspace_id || '|' || channel_id || '|' || thread_id end`;
    const hex = postgres ? sql`encode(convert_to(${key}, 'UTF8'), 'hex')` : sql`lower(hex(${key}))`;
    await sql`update hermes_recall_message set place = 'p' || ${hex} || '0'`.execute(db);
    await db.schema.createIndex('hermes_recall_message_by_place').on('hermes_recall_message').columns(['place', 'at']).execute();
    if (!postgres) {
      // The trigger of step 0008 wrote (text) only; the new one writes the place with it.
      await sql`drop trigger if exists hermes_recall_message_fts_add`.execute(db);
      await sql`drop table hermes_recall_message_fts`.execute(db);
      await sql`create virtual table hermes_recall_message_fts using fts5(text, place, content='hermes_recall_message', content_rowid='seq', tokenize='porter unicode61')`.execute(db);
      await sql`insert into hermes_recall_message_fts(hermes_recall_message_fts) values ('rebuild')`.execute(db);
      await sql`create trigger hermes_recall_message_fts_add after insert on hermes_recall_message
        begin insert into hermes_recall_message_fts(rowid, text, place) values (new.seq, new.text, new.place); end`.execute(db);
    }
  },
};

/**
 * Step 0011: taking part is written by the message's own insert. A person's message in a channel
 * makes them a member of where it was said (the channel's top level or its thread) and, for a
 * Discord thread, of the parent channel's top level; DMs and the bot's answers make nobody a member.
 * A trigger does it inside the insert of the message (both engines), so recording a message is one
 * statement instead of two or three, and the message and its author's membership land together.
 * A replayed message (its id already stored) inserts nothing, so it adds no membership either:
 * the first copy's insert wrote it. This is the rule message-index.ts wrote by hand before.
 */
export const recallMemberTriggerStep: Migration = {
  async up(db: Kysely<unknown>) {
    const member = (channel: string, thread: string) =>
      `insert into hermes_recall_member (member, platform, workspace_id, channel_id, thread_id, since)
        values (new.author, new.platform, new.workspace_id, ${channel}, ${thread}, new.at) on conflict do nothing;`;
    if (isPostgres(db)) {
      await sql`create function hermes_recall_member_add() returns trigger language plpgsql as $$
        begin
          if new.author <> 'bot' and new.dm_owner is null then
            ${sql.raw(member('new.channel_id', 'new.thread_id'))}
            if new.parent_channel_id is not null and new.parent_channel_id <> '' then
              ${sql.raw(member('new.parent_channel_id', "''"))}
            end if;
          end if;
          return null;
        end $$`.execute(db);
      await sql`create trigger hermes_recall_member_add after insert on hermes_recall_message
        for each row execute function hermes_recall_member_add()`.execute(db);
      return;
    }
    await sql`create trigger hermes_recall_member_add after insert on hermes_recall_message
      when new.author <> 'bot' and new.dm_owner is null
      begin
        ${sql.raw(member('new.channel_id', 'new.thread_id'))}
      end`.execute(db);
    await sql`create trigger hermes_recall_member_add_parent after insert on hermes_recall_message
      when new.author <> 'bot' and new.dm_owner is null and new.parent_channel_id is not null and new.parent_channel_id <> ''
      begin
        ${sql.raw(member('new.parent_channel_id', "''"))}
      end`.execute(db);
  },
};

/**
 * Step 0013: a message's search row rides on its history row. The gateway's question and the
 * turn's answer are each appended to the session (`hermes_message`) and were each indexed by a
 * second statement; now the append carries the search row as JSON in `hermes_message.search_row`
 * (built by message-index.ts, opaque to the session store) and this trigger writes it into
 * `hermes_recall_message` inside the append's own statement. With it, the full-text row (step
 * 0009) and the author's membership (step 0011) follow from that insert as before, so a message,
 * its search row and who took part land together or not at all. An id already stored (a replay)
 * inserts nothing. The column is cleared as it is read: the text is not kept a second time in the
 * history. History rows without a search row (tool messages, notes, other people's thread
 * messages) leave search untouched.
 *
 * PostgreSQL: a `before insert` row trigger writes the search row and stores the history row with
 * the column empty. SQLite cannot change the row before it is stored, so an `after insert`
 * trigger writes the search row and empties the column of the row just written.
 */
export const recallSearchRowStep: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('hermes_message').addColumn('search_row', 'text').execute();
    const columns = 'id, platform, workspace_id, channel_id, thread_id, parent_channel_id, dm_owner, author, author_name, text, at, place';
    if (isPostgres(db)) {
      const field = (name: string) => `r->>'${name}'`;
      await sql`create function hermes_recall_search_row() returns trigger language plpgsql as $$
        declare r jsonb;
        begin
          if new.search_row is null then return new; end if;
          r := new.search_row::jsonb;
          insert into hermes_recall_message (${sql.raw(columns)})
            values (${sql.raw(['id', 'platform', 'workspace_id', 'channel_id', 'thread_id', 'parent_channel_id', 'dm_owner', 'author', 'author_name', 'text'].map(field).join(', '))},
              (${sql.raw(field('at'))})::double precision, ${sql.raw(field('place'))})
            on conflict (id) do nothing;
          new.search_row := null;
          return new;
        end $$`.execute(db);
      await sql`create trigger hermes_recall_search_row before insert on hermes_message
        for each row execute function hermes_recall_search_row()`.execute(db);
      return;
    }
    const field = (name: string) => `json_extract(new.search_row, '$.${name}')`;
    // `where true`: SQLite reads an upsert after `insert … select` only with a where clause.
    await sql`create trigger hermes_recall_search_row after insert on hermes_message
      when new.search_row is not null
      begin
        insert into hermes_recall_message (${sql.raw(columns)})
          select ${sql.raw(columns.split(', ').map(field).join(', '))} where true
          on conflict (id) do nothing;
        update hermes_message set search_row = null where rowid = new.rowid;
      end`.execute(db);
  },
};
