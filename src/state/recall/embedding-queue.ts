import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { Embedder } from '../../runtime/provider/embedder.js';
import type { OpenedDatabase } from '../store/database.js';
import { encodeVector } from './vectors.js';

/**
 * Embeds messages and facts in the background: `add` only puts the text on a bounded in-memory
 * queue and returns, so no reply ever waits on the embedding server. One batch is in flight at a
 * time; a failed batch is logged (at most once a minute) and dropped, and those texts stay found by
 * keywords. A full queue drops new texts the same way. Nothing here is durable: after a restart,
 * texts not yet embedded are found by keywords only.
 */
export interface EmbeddingItem {
  kind: 'message' | 'fact';
  ref: string;
  /** Facts: the owner's speaker key. */
  owner?: string;
  text: string;
}

export interface EmbeddingQueue {
  readonly model: string;
  add(item: EmbeddingItem): void;
  /** The vector of a search query, or undefined when the server could not give one in time. */
  queryVector(text: string): Promise<Float32Array | undefined>;
  /** Resolves once everything added so far is written or dropped (tests, shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export interface EmbeddingQueueOptions {
  embedder: Embedder;
  database: OpenedDatabase;
  clock: Clock;
  log: Logger;
  maxQueued?: number;
  batchSize?: number;
}

const LOG_EVERY_MS = 60_000;

export function createEmbeddingQueue(opts: EmbeddingQueueOptions): EmbeddingQueue {
  const { embedder, database, clock, log } = opts;
  const maxQueued = opts.maxQueued ?? 1_000;
  const batchSize = opts.batchSize ?? 32;
  const queue: EmbeddingItem[] = [];
  let draining: Promise<void> | undefined;
  let closed = false;
  const lastLogged = new Map<string, number>();
  const stop = new AbortController();

  function warnSometimes(kind: string, fields: Record<string, unknown>, msg: string): void {
    const now = clock.now();
    if (now - (lastLogged.get(kind) ?? -Infinity) < LOG_EVERY_MS) return;
    lastLogged.set(kind, now);
    log.warn(fields, msg);
  }

  async function write(items: EmbeddingItem[], vectors: Float32Array[]): Promise<void> {
    const at = clock.now();
    for (let i = 0; i < items.length; i++) {
      const it = items[i]!;
      const vector = encodeVector(vectors[i]!);
      await database.db
        .insertInto('hermes_embedding')
        .values({ kind: it.kind, ref: it.ref, owner: it.owner ?? null, model: embedder.model, vector, at })
        .onConflict((oc) => oc.columns(['kind', 'ref']).doUpdateSet({ vector, model: embedder.model, at, owner: it.owner ?? null }))
        .execute();
    }
  }

  async function drain(): Promise<void> {
    // Each pass takes at least one item off the queue, so the loop ends.
    while (queue.length > 0 && !closed) {
      const batch = queue.splice(0, batchSize);
      try {
        const vectors = await embedder.embed(batch.map((b) => b.text), stop.signal);
        await write(batch, vectors);
      } catch (err) {
        if (closed) return;
        warnSometimes('batch', { err: (err as Error).message, dropped: batch.length, model: embedder.model }, 'embeddings: a batch failed and was dropped; those texts are still found by keywords');
      }
    }
  }

  function kick(): void {
    if (draining || closed) return;
    draining = new Promise<void>((resolve) => setImmediate(resolve))
      .then(drain)
      .finally(() => {
        draining = undefined;
        if (queue.length > 0) kick();
      });
  }

  return {
    model: embedder.model,
    add(item) {
      if (closed || !item.text.trim()) return;
      if (queue.length >= maxQueued) {
        warnSometimes('full', { queued: queue.length, model: embedder.model }, 'embeddings: the queue is full, a text was not embedded (it is still found by keywords)');
        return;
      }
      queue.push(item);
      kick();
    },
    async queryVector(text) {
      try {
        const [v] = await embedder.embed([text], stop.signal);
        return v;
      } catch (err) {
        warnSometimes('query', { err: (err as Error).message, model: embedder.model }, 'embeddings: a search query could not be embedded; searching by keywords only');
        return undefined;
      }
    },
    async idle() {
      // Bounded: each round waits for a drain that empties the queue or ends on close.
      for (let i = 0; i < 1_000 && (draining || (queue.length > 0 && !closed)); i++) await draining;
    },
    async close() {
      closed = true;
      stop.abort();
      await draining?.catch(() => undefined);
    },
  };
}
