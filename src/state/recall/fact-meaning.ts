import { speakerKey, type Speaker } from '../../basics/types.js';
import type { FactStore } from '../memory/fact-store.js';
import type { FactView, UserFacts } from '../memory/user-facts.js';
import type { OpenedDatabase } from '../store/database.js';
import type { EmbeddingQueue } from './embedding-queue.js';
import { fusedOrder } from './rank-fusion.js';
import { cosine, decodeVector } from './vectors.js';

/**
 * Facts found by meaning as well as by words (HERMES_EMBEDDING_MODEL): a saved or merged fact is
 * queued for embedding, recall_facts with a query fuses the keyword ranking with cosine similarity
 * (reciprocal rank), and forgetting a fact deletes its vector with it. Without a vector (not yet
 * embedded, or the server failed) a fact is still found by its words.
 */
const ALL_FACTS = 1_000;
/** Every fact has some similarity to any query: without a limit, only the best few are returned. */
const MEANING_DEFAULT_LIMIT = 20;

const factRef = (owner: string, id: string) => `${owner}/${id}`;

export function withFactMeaning(facts: FactStore, deps: { database: OpenedDatabase; embeddings: EmbeddingQueue }): FactStore {
  const { database, embeddings } = deps;

  async function dropVectors(s: Speaker, idOrAll: string): Promise<void> {
    const owner = speakerKey(s);
    const target = idOrAll.trim().toLowerCase();
    let q = database.db.deleteFrom('hermes_embedding').where('kind', '=', 'fact').where('owner', '=', owner);
    if (target !== 'all') q = q.where('ref', '=', factRef(owner, target));
    await q.execute();
  }

  async function recallByMeaning(s: Speaker, base: UserFacts, query: string, limit: number | undefined): Promise<FactView[]> {
    const words = await base.recall(query, ALL_FACTS);
    const q = await embeddings.queryVector(query);
    if (!q) return words.slice(0, limit ?? words.length);
    const all = await base.recall(undefined, ALL_FACTS);
    const owner = speakerKey(s);
    const rows = await database.db.selectFrom('hermes_embedding').select(['ref', 'vector']).where('kind', '=', 'fact').where('owner', '=', owner).where('model', '=', embeddings.model).execute();
    const vectors = new Map(rows.map((r) => [r.ref, r.vector]));
    const byMeaning = all
      .map((f) => {
        const v = vectors.get(factRef(owner, f.id));
        const d = v ? decodeVector(v) : undefined;
        return { f, sim: d ? cosine(q, d) : 0 };
      })
      .filter((r) => r.sim > 0)
      .sort((a, b) => b.sim - a.sim);
    const byId = new Map(all.map((f) => [f.id, f]));
    const order = fusedOrder([{ ids: words.map((f) => f.id) }, { ids: byMeaning.map((r) => r.f.id) }], (a, b) => byId.get(b)!.updatedAt - byId.get(a)!.updatedAt);
    const out = order.map((id) => byId.get(id)).filter((f): f is FactView => f !== undefined);
    return out.slice(0, limit ?? MEANING_DEFAULT_LIMIT);
  }

  return {
    ...facts,
    forUser(s) {
      const base = facts.forUser(s);
      return {
        async remember(text) {
          const r = await base.remember(text);
          embeddings.add({ kind: 'fact', ref: factRef(speakerKey(s), r.fact.id), owner: speakerKey(s), text: r.fact.text });
          return r;
        },
        recall: (query, limit) => (query?.trim() ? recallByMeaning(s, base, query, limit) : base.recall(query, limit)),
        async forget(idOrAll) {
          const n = await base.forget(idOrAll);
          if (n > 0) await dropVectors(s, idOrAll);
          return n;
        },
      };
    },
    async forget(s, idOrAll) {
      const n = await facts.forget(s, idOrAll);
      if (n > 0) await dropVectors(s, idOrAll);
      return n;
    },
  };
}
