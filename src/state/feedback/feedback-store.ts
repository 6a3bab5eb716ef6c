import type { Kysely } from 'kysely';
import type { Tables } from '../store/db-schema.js';

/**
 * Votes on answers (the thumbs under a final answer), in `hermes_feedback`: one row per turn and
 * voter, so a second click replaces the first and a turn's score is never inflated by one person.
 * The bot writes; the dashboard, `npm run stats` and `npm run eval -- --from-feedback` read.
 */
export type VoteValue = 'up' | 'down';

export interface FeedbackVote {
  turnId: string;
  voter: string;
  vote: VoteValue;
  platform: string;
  conversation: string;
  votedAt: number;
}

export interface FeedbackSummary {
  up: number;
  down: number;
  /** Turns with at least one vote. */
  turns: number;
}

export interface FeedbackReader {
  votesFor(turnId: string): Promise<FeedbackVote[]>;
  /** Votes cast in [since, until). */
  summary(window: { since: number; until: number }): Promise<FeedbackSummary>;
  /** Turns with a down vote cast in the window, newest first, with their votes. */
  downVoted(window: { since: number; until: number }, limit: number): Promise<Array<{ turnId: string; votes: FeedbackVote[] }>>;
}

export interface FeedbackStore extends FeedbackReader {
  /** 'recorded': a first vote; 'changed': it replaced the voter's other vote; 'same': a repeat. */
  vote(v: FeedbackVote): Promise<'recorded' | 'changed' | 'same'>;
}

type Row = Tables['hermes_feedback'];

const toVote = (r: Row): FeedbackVote => ({ turnId: r.turn_id, voter: r.voter, vote: r.vote === 'up' ? 'up' : 'down', platform: r.platform, conversation: r.conversation, votedAt: r.voted_at });

/** `db`: any Kysely over the tables (the bot's, or a read-only one a command line opened). */
export function createFeedbackStore(db: Kysely<Tables>): FeedbackStore {
  const reader = feedbackReader(db);
  return {
    ...reader,
    async vote(v) {
      const before = await db.selectFrom('hermes_feedback').select('vote').where('turn_id', '=', v.turnId).where('voter', '=', v.voter).executeTakeFirst();
      if (before?.vote === v.vote) return 'same';
      const row: Row = { turn_id: v.turnId, voter: v.voter, vote: v.vote, platform: v.platform, conversation: v.conversation, voted_at: v.votedAt };
      await db
        .insertInto('hermes_feedback')
        .values(row)
        .onConflict((oc) => oc.columns(['turn_id', 'voter']).doUpdateSet({ vote: v.vote, voted_at: v.votedAt }))
        .execute();
      return before ? 'changed' : 'recorded';
    },
  };
}

export function feedbackReader(db: Kysely<Tables>): FeedbackReader {
  return {
    async votesFor(turnId) {
      const rows = await db.selectFrom('hermes_feedback').selectAll().where('turn_id', '=', turnId).orderBy('voted_at').execute();
      return rows.map(toVote);
    },
    async summary({ since, until }) {
      const rows = await db
        .selectFrom('hermes_feedback')
        .select(['vote', 'turn_id'])
        .where('voted_at', '>=', since)
        .where('voted_at', '<', until)
        .execute();
      return { up: rows.filter((r) => r.vote === 'up').length, down: rows.filter((r) => r.vote === 'down').length, turns: new Set(rows.map((r) => r.turn_id)).size };
    },
    async downVoted({ since, until }, limit) {
      const turns = await db
        .selectFrom('hermes_feedback')
        .select('turn_id')
        .select((eb) => eb.fn.max('voted_at').as('last'))
        .where('vote', '=', 'down')
        .where('voted_at', '>=', since)
        .where('voted_at', '<', until)
        .groupBy('turn_id')
        .orderBy('last', 'desc')
        .limit(limit)
        .execute();
      if (turns.length === 0) return [];
      const rows = await db.selectFrom('hermes_feedback').selectAll().where('turn_id', 'in', turns.map((t) => t.turn_id)).orderBy('voted_at').execute();
      return turns.map((t) => ({ turnId: t.turn_id, votes: rows.filter((r) => r.turn_id === t.turn_id).map(toVote) }));
    },
  };
}
