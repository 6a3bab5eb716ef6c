import type { Speaker } from '../../basics/types.js';
import type { EmbeddingQueue } from './embedding-queue.js';
import type { MessageIndex, SearchScope, StoredMessage } from './message-index.js';
import { fusedOrder, type RankedList } from './rank-fusion.js';
import { cosine, decodeVector } from './vectors.js';

/**
 * search_conversations behind the tool API: scoped to the verified speaker before a tool sees it
 * (no user id to pass), so what one person may find is decided here and in the index's query.
 *
 * Ranking: the keyword list (bm25 / ts_rank), with an embedding model also the meaning list
 * (cosine similarity over the newest visible embedded messages), and a recency list, fused by
 * reciprocal rank; among equals the newer message first.
 */
export interface ConversationHit {
  text: string;
  /** Epoch ms. */
  at: number;
  author: string;
  fromBot: boolean;
  place: {
    platform: string;
    channelId: string;
    threadId?: string;
    /** When the thread's first stored message was written (epoch ms), to name the thread. */
    threadStartedAt?: number;
    parentChannelId?: string;
    isDm: boolean;
  };
}

export interface ConversationSearch {
  search(query: string, limit: number): Promise<ConversationHit[]>;
  /** False when searching from a shared conversation: the speaker's DMs are left out. */
  readonly includesDms: boolean;
}

export const SEARCH_DEFAULT_LIMIT = 10;
export const SEARCH_MAX_LIMIT = 30;
/** How many keyword and meaning candidates feed the fusion. */
const CANDIDATES = 60;
/** Newest visible embedded messages compared by meaning (bounds the work of one search). */
const MEANING_WINDOW = 2_000;
/** Recency breaks near-ties between good matches; it never lifts a message no list found. */
const RECENCY_WEIGHT = 0.3;

export type ConversationSearches = ReturnType<typeof createConversationSearch>;

export function createConversationSearch(deps: { index: MessageIndex; embeddings?: EmbeddingQueue }) {
  return {
    forSpeaker(speaker: Speaker, scope: SearchScope): ConversationSearch {
      return {
        includesDms: scope.dms,
        async search(query, limit) {
          const n = Math.max(1, Math.min(SEARCH_MAX_LIMIT, Math.floor(limit) || SEARCH_DEFAULT_LIMIT));
          const byId = new Map<string, StoredMessage>();
          const keyword = await deps.index.keywordSearch(speaker, query, CANDIDATES, scope);
          for (const m of keyword) byId.set(m.id, m);
          const lists: RankedList[] = [{ ids: keyword.map((m) => m.id) }];
          const meaning = deps.embeddings ? await meaningList(speaker, scope, query, deps.index, deps.embeddings) : [];
          if (meaning.length > 0) {
            for (const m of meaning) byId.set(m.id, m);
            lists.push({ ids: meaning.map((m) => m.id) });
          }
          const found = [...byId.values()];
          if (found.length === 0) return [];
          lists.push({ ids: [...found].sort((a, b) => b.at - a.at).map((m) => m.id), weight: RECENCY_WEIGHT });
          const order = fusedOrder(lists, (a, b) => byId.get(b)!.at - byId.get(a)!.at).slice(0, n);
          const starts = new Map<string, number | undefined>();
          const hits: ConversationHit[] = [];
          for (const id of order) {
            const m = byId.get(id)!;
            const threadKey = `${m.channelId}/${m.threadId ?? ''}`;
            if (m.threadId && !starts.has(threadKey)) starts.set(threadKey, await deps.index.threadStart(m));
            const started = starts.get(threadKey);
            hits.push({
              text: m.text,
              at: m.at,
              author: m.authorName,
              fromBot: m.fromBot,
              place: {
                platform: m.platform,
                channelId: m.channelId,
                ...(m.threadId && { threadId: m.threadId }),
                ...(started !== undefined && { threadStartedAt: started }),
                ...(m.parentChannelId && { parentChannelId: m.parentChannelId }),
                isDm: m.isDm,
              },
            });
          }
          return hits;
        },
      };
    },
  };
}

/** Visible messages closest in meaning to the query; empty when the query cannot be embedded. */
async function meaningList(speaker: Speaker, scope: SearchScope, query: string, index: MessageIndex, embeddings: EmbeddingQueue): Promise<StoredMessage[]> {
  if (!query.trim()) return [];
  const q = await embeddings.queryVector(query);
  if (!q) return [];
  const rows = await index.embeddedVisible(speaker, embeddings.model, MEANING_WINDOW, scope);
  return rows
    .map((r) => ({ message: r.message, sim: (() => { const v = decodeVector(r.vector); return v ? cosine(q, v) : 0; })() }))
    .filter((r) => r.sim > 0)
    .sort((a, b) => b.sim - a.sim)
    .slice(0, CANDIDATES)
    .map((r) => r.message);
}
