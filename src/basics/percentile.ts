/**
 * The percentile every report of the bot uses (`npm run stats`, the dashboard, `/hermes status`):
 * of numbers sorted ascending, the one at index ⌊p/100 · n⌋ (capped at the last); 0 for none.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
