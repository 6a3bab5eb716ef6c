/**
 * "Did you mean …?" for names a model got slightly wrong (tool names, time zones).
 * A suggestion lets the model fix its call in one step instead of guessing again.
 */

/** Levenshtein distance, case-insensitive; bounded by the (short) names we compare. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  if (s === t) return 0;
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    prev = cur;
  }
  return prev[t.length] ?? 0;
}

/**
 * The candidates nearest to `name`, best first (ties keep the candidates' order). A candidate
 * that contains the name or is contained in it ("time" → "get_current_time") ranks first: a
 * shortened name is a likelier mistake than an unrelated short one.
 */
export function closestMatches(name: string, candidates: readonly string[], limit = 1): string[] {
  const lower = name.toLowerCase();
  const contains = (c: string) => (lower !== '' && c.toLowerCase().includes(lower)) || (c !== '' && lower.includes(c.toLowerCase()));
  return candidates
    .map((c, index) => ({ c, index, near: contains(c) ? 0 : 1, d: editDistance(name, c) }))
    .sort((x, y) => x.near - y.near || x.d - y.d || x.index - y.index)
    .slice(0, Math.max(0, limit))
    .map((x) => x.c);
}
