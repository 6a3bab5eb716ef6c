/** Small value helpers shared across the core, so each question has one answer. */

/** A plain JSON-style object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The text trimmed, or null when nothing but whitespace is left (a model's empty content). */
export function blankToNull(s: string): string | null {
  const t = s.trim();
  return t === '' ? null : t;
}
