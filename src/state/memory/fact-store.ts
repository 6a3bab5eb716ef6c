import { randomInt } from 'node:crypto';
import type { Clock } from '../../basics/clock.js';
import { speakerKey, type Speaker } from '../../basics/types.js';
import { storeKey, type Store, type WriteNotice } from '../store/store.js';
import type { Invalidations } from '../cluster/invalidations.js';
import type { FactView, UserFacts } from './user-facts.js';
import type { TokenCounter } from '../../runtime/context/token-counter.js';
import { cleanFactText, isNearDuplicate, mergedFactText, lexicalScore, looksLikeSecret, queryTerms } from './fact-text.js';

/**
 * Long-term facts, one document per user under an explicit key built from speakerKey (platform,
 * workspace, user id, each encoded). Deleting a user's facts deletes exactly that key; nothing here
 * ever matches keys by prefix or pattern, so `_`, `%`, `:` or quotes in an id cannot reach another
 * user's facts. Updates go through Store.update, serialised per user.
 */
export interface FactStore {
  /** The speaking user's facts, for tools: no user id can be passed in later. */
  forUser(speaker: Speaker): UserFacts;
  /** Facts for the system prompt: most relevant to `query` first, together within `budgetTokens`. */
  promptFacts(speaker: Speaker, query: string, budgetTokens: number, counter: TokenCounter): Promise<FactView[]>;
  /** All of the user's facts, oldest first (for `/hermes memory`). */
  list(speaker: Speaker): Promise<FactView[]>;
  /** Deletes one fact by id, or every fact with "all"; returns how many were deleted. */
  forget(speaker: Speaker, idOrAll: string): Promise<number>;
}

export interface FactStoreOptions {
  maxFactsPerUser?: number;
  maxFactChars?: number;
  /**
   * PostgreSQL: the instances' invalidations (pg-work-queue.ts). With them each instance keeps the
   * facts it read in memory while it hears every change (every write here tells all instances when
   * it commits), instead of reading the speaker's facts on every turn. Without (SQLite: the cached
   * store in front of the file already keeps them), every read goes to the store.
   */
  invalidations?: Invalidations;
  /** Users whose facts one instance keeps in memory; default 10,000. */
  cacheMax?: number;
}

interface FactDoc {
  v: 1;
  facts: FactView[];
}

/** Errors the tools show the model verbatim; each says what to do instead. */
export const FACT_ERRORS = {
  empty: 'The fact is empty. Pass the fact as one short sentence.',
  tooLong: (max: number, len: number) => `The fact is ${len} characters; the limit is ${max}. Save a shorter sentence with only what matters.`,
  secret:
    'Not saved: this looks like a secret (a password, API key or token). Secrets are never stored in memory; tell the user to keep it in a password manager.',
  full: (max: number) => `Memory is full (${max} facts for this user). Forget an outdated fact with forget_fact first.`,
} as const;

/** How a line of the system prompt lists a fact; promptFacts budgets with the same shape. */
export function factPromptLine(f: Pick<FactView, 'id' | 'text'>): string {
  return `- [${f.id}] ${f.text}`;
}

const RECENCY_HALF_LIFE_MS = 30 * 24 * 3600 * 1000;
/** Recency only breaks near-ties: a matching old fact beats a fresh unrelated one. */
const RECENCY_WEIGHT = 0.2;
const DEFAULT_RECALL_LIMIT = 50;

function isFact(x: unknown): x is FactView {
  const f = x as FactView;
  return !!f && typeof f.id === 'string' && typeof f.text === 'string' && typeof f.createdAt === 'number' && typeof f.updatedAt === 'number';
}

export function createFactStore(store: Store, clock: Clock, opts: FactStoreOptions = {}): FactStore {
  const maxFacts = opts.maxFactsPerUser ?? 200;
  const maxChars = opts.maxFactChars ?? 500;
  const keyOf = (s: Speaker) => storeKey('facts', speakerKey(s));
  const cache = createFactCache(opts.invalidations, opts.cacheMax ?? CACHE_MAX);

  async function load(s: Speaker): Promise<FactView[]> {
    const key = keyOf(s);
    const kept = cache.get(key);
    if (kept) return kept;
    const seen = cache.mark();
    const doc = await store.get<FactDoc>(key);
    const facts = Array.isArray(doc?.facts) ? doc.facts.filter(isFact) : [];
    cache.fill(seen, key, facts);
    return facts;
  }

  function newId(taken: Set<string>): string {
    // 5 hex digits after "f": short enough to type in `/hermes forget f1a2b`, ~1M per user.
    for (let i = 0; i < 50; i++) {
      const id = `f${randomInt(0x100000).toString(16).padStart(5, '0')}`;
      if (!taken.has(id)) return id;
    }
    return `f${randomInt(2 ** 40).toString(16)}`;
  }

  function ranked(facts: FactView[], query: string): { fact: FactView; lexical: number; score: number }[] {
    const terms = queryTerms(query);
    const now = clock.now();
    return facts
      .map((fact) => {
        const lexical = lexicalScore(terms, fact.text);
        const age = Math.max(0, now - fact.updatedAt);
        return { fact, lexical, score: lexical + RECENCY_WEIGHT * Math.pow(0.5, age / RECENCY_HALF_LIFE_MS) };
      })
      .sort((a, b) => b.score - a.score || b.fact.updatedAt - a.fact.updatedAt);
  }

  async function forget(s: Speaker, idOrAll: string): Promise<number> {
    const target = idOrAll.trim().toLowerCase();
    if (!target) return 0;
    const key = keyOf(s);
    if (target === 'all') {
      const n = (await load(s)).length;
      await cache.writing(key, (notice) => store.delete(key, { notice }));
      return n;
    }
    let removed = 0;
    await cache.writing(key, (notice) =>
      store.update<FactDoc>(
        key,
        (cur) => {
          const facts = Array.isArray(cur?.facts) ? cur.facts.filter(isFact) : [];
          const rest = facts.filter((f) => f.id.toLowerCase() !== target);
          removed = facts.length - rest.length;
          return removed > 0 ? { v: 1, facts: rest } : undefined;
        },
        { notice },
      ),
    );
    return removed;
  }

  function forUser(s: Speaker): UserFacts {
    return {
      async remember(raw) {
        const text = cleanFactText(raw);
        if (!text) throw new Error(FACT_ERRORS.empty);
        if (text.length > maxChars) throw new Error(FACT_ERRORS.tooLong(maxChars, text.length));
        if (looksLikeSecret(text)) throw new Error(FACT_ERRORS.secret);
        const now = clock.now();
        let outcome: { fact: FactView; merged: boolean } | undefined;
        let full = false;
        const key = keyOf(s);
        await cache.writing(key, (notice) => store.update<FactDoc>(key, (cur) => {
          const facts = Array.isArray(cur?.facts) ? cur.facts.filter(isFact) : [];
          const dup = facts.findIndex((f) => isNearDuplicate(f.text, text));
          if (dup >= 0) {
            const old = facts[dup]!;
            const fact: FactView = { ...old, text: mergedFactText(old.text, text), updatedAt: now };
            outcome = { fact, merged: true };
            return { v: 1, facts: facts.map((f, i) => (i === dup ? fact : f)) };
          }
          if (facts.length >= maxFacts) {
            full = true;
            return undefined;
          }
          const fact: FactView = { id: newId(new Set(facts.map((f) => f.id))), text, createdAt: now, updatedAt: now };
          outcome = { fact, merged: false };
          return { v: 1, facts: [...facts, fact] };
        }, { notice }));
        if (full || !outcome) throw new Error(FACT_ERRORS.full(maxFacts));
        return outcome;
      },

      async recall(query, limit = DEFAULT_RECALL_LIMIT) {
        const facts = await load(s);
        const n = Math.max(1, Math.min(Math.floor(limit) || DEFAULT_RECALL_LIMIT, maxFacts));
        if (!query?.trim() || queryTerms(query).length === 0) {
          return [...facts].sort((a, b) => b.updatedAt - a.updatedAt).slice(0, n);
        }
        return ranked(facts, query)
          .filter((r) => r.lexical > 0)
          .slice(0, n)
          .map((r) => r.fact);
      },

      forget: (idOrAll) => forget(s, idOrAll),
    };
  }

  return {
    forUser,
    async promptFacts(s, query, budgetTokens, counter) {
      const out: FactView[] = [];
      const facts = await load(s);
      // Most people have none: no ranking (the query's words are not even split) on every step.
      if (facts.length === 0) return out;
      let used = 0;
      for (const { fact } of ranked(facts, query)) {
        const cost = counter.count(factPromptLine(fact)) + 1; // + the newline
        if (used + cost > budgetTokens) continue; // a shorter, less relevant fact may still fit
        used += cost;
        out.push(fact);
      }
      return out;
    },
    async list(s) {
      return (await load(s)).sort((a, b) => a.createdAt - b.createdAt);
    },
    forget,
  };
}

/** Users whose facts one instance keeps (each entry is one user's list, at most maxFactsPerUser facts). */
const CACHE_MAX = 10_000;
/** Invalidation topic of a user's facts (the key is the store key, which names exactly one user). */
const TOPIC = 'facts';

/**
 * The facts this instance read, per store key (one user each: speakerKey, every part encoded, so no
 * key is shared by two users), kept only while invalidations are heard (Invalidations.live). Every
 * write through this store sends one in its own transaction; a change heard (or the connection lost
 * or back) drops the key (or everything), and a read that raced a write or a change is not kept.
 * Lists are kept as JSON and parsed on every read, so a caller never changes what is kept.
 */
function createFactCache(inv: Invalidations | undefined, max: number) {
  const entries = new Map<string, string>();
  // Bumped when a write here starts and when it ends: a read overlapping one is not kept.
  let writes = 0;
  inv?.on(TOPIC, (key) => (key === undefined ? entries.clear() : entries.delete(key)));
  return {
    get(key: string): FactView[] | undefined {
      if (!inv?.live()) return undefined;
      const json = entries.get(key);
      if (json === undefined) return undefined;
      // Most recently used last: the oldest goes first when full.
      entries.delete(key);
      entries.set(key, json);
      return JSON.parse(json) as FactView[];
    },
    /** Before a read of the store: fill() keeps what it read only if nothing changed since. */
    mark: () => ({ writes, gen: inv?.generation() }),
    fill(seen: { writes: number; gen: number | undefined }, key: string, facts: FactView[]): void {
      if (!inv?.live() || seen.writes !== writes || inv.generation() !== seen.gen) return;
      entries.delete(key);
      if (entries.size >= max) entries.delete(entries.keys().next().value!);
      entries.set(key, JSON.stringify(facts));
    },
    /** Runs a write of `key` with the notice every instance (this one too) drops its copy on. */
    async writing<R>(key: string, write: (notice: WriteNotice | undefined) => Promise<R>): Promise<R> {
      writes++;
      entries.delete(key);
      try {
        return await write(inv?.notice(TOPIC, key));
      } finally {
        writes++;
        entries.delete(key);
      }
    },
  };
}
