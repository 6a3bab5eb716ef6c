/**
 * `HERMES_*` variables the bot does not read. A misspelt name (`HERMES_MAX_STEP=3`) used to be
 * ignored in silence, so the person believed a limit was in force that was not; now the start
 * log names it and the closest name the bot knows.
 */

/** Edit distance (insert, delete, replace one character), bounded by the strings' lengths. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** The known name nearest to `name`, if one is near enough to be a likely typo. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(name, k);
    if (!best || d < best.d) best = { name: k, d };
  }
  // A third of the name may differ (HERMES_ itself always matches): typos and singular/plural
  // slips, not unrelated names.
  return best && best.d <= Math.max(2, Math.floor(name.length / 3)) ? best.name : undefined;
}

/** One warning per set `HERMES_*` variable that is not in `known`. */
export function unknownSettingWarnings(env: Record<string, string>, known: readonly string[]): string[] {
  const hermes = known.filter((k) => k.startsWith('HERMES_'));
  return Object.keys(env)
    .filter((name) => name.startsWith('HERMES_') && !known.includes(name))
    .sort()
    .map((name) => {
      const near = closestName(name, hermes);
      return near
        ? `${name} is set but hermes does not read it: did you mean ${near}? Rename it, or unset it.`
        : `${name} is set but hermes does not read it: see the settings table in the README for the names, or unset it.`;
    });
}
