/**
 * JSON with object keys sorted at every depth, so equal values always give the same text: the
 * approval hash (state/approvals), the loop guards' "same call again" key and replay's argument
 * comparison all use this one function. Changing its output changes every stored approval's hash,
 * so stored approvals would read as tampered: keep it byte for byte.
 *
 * Keys sort by UTF-16 code units; undefined members are dropped (as JSON.stringify does); an
 * undefined value is `null`.
 */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value ?? null, (_key, v: unknown) =>
      v !== null && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
    ) ?? 'null'
  );
}

/** JSON text in canonical form (spacing and key order gone); text that is not JSON comes back trimmed. */
export function canonicalJsonText(text: string): string {
  try {
    return canonicalJson(JSON.parse(text) as unknown);
  } catch {
    return text.trim();
  }
}
