/**
 * Reciprocal rank fusion: each ranked list gives an item weight / (k + rank), and the sums order
 * the items. Why ranks and not scores: bm25, ts_rank and cosine similarity live on scales that
 * cannot be added, but "third best by words, first by meaning" can. k = 60 is the usual constant:
 * it keeps one list's top item from drowning every other list.
 */
export interface RankedList {
  /** Item ids, best first. */
  ids: readonly string[];
  weight?: number;
}

export const RRF_K = 60;

export function fuseRanks(lists: readonly RankedList[], k = RRF_K): Map<string, number> {
  const scores = new Map<string, number>();
  for (const list of lists) {
    const w = list.weight ?? 1;
    list.ids.forEach((id, i) => scores.set(id, (scores.get(id) ?? 0) + w / (k + i + 1)));
  }
  return scores;
}

/** The ids of all lists, best fused score first; ties keep the order of `tieBreak` (e.g. newest first). */
export function fusedOrder(lists: readonly RankedList[], tieBreak: (a: string, b: string) => number = () => 0, k = RRF_K): string[] {
  const scores = fuseRanks(lists, k);
  return [...scores.keys()].sort((a, b) => scores.get(b)! - scores.get(a)! || tieBreak(a, b));
}
