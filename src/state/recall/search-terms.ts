/**
 * The words of a search query, as both full-text engines are given them: letters and digits only
 * (so no query syntax of FTS5 or tsquery can be typed in), lower case, each once, at most 16.
 * One-letter words are dropped unless they are digits: "a" and "I" match everything and nothing useful.
 */
export const MAX_SEARCH_TERMS = 16;

export function searchTerms(query: string): string[] {
  const words = query.toLowerCase().normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? [];
  const out: string[] = [];
  for (const w of words) {
    if (w.length < 2 && !/\p{N}/u.test(w)) continue;
    if (w.length > 64 || out.includes(w)) continue;
    out.push(w);
    if (out.length === MAX_SEARCH_TERMS) break;
  }
  return out;
}
