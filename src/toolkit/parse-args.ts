/**
 * Reads the arguments text a model produced into a value. Some models (and some servers' tool
 * parsers) JSON-encode the arguments twice, so a JSON string that itself holds an object or
 * array is unwrapped; an empty or `null` argument list means "no arguments".
 */

export type ParsedArgs = { ok: true; value: unknown } | { ok: false; problem: string };

const MAX_UNWRAP = 3;

export function parseArgs(raw: unknown): ParsedArgs {
  if (typeof raw !== 'string') return { ok: true, value: raw ?? {} };
  const text = raw.trim();
  if (text === '' || text === 'null') return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  }
  for (let i = 0; i < MAX_UNWRAP && typeof value === 'string'; i++) {
    const inner = value.trim();
    if (!inner.startsWith('{') && !inner.startsWith('[')) break;
    try {
      value = JSON.parse(inner);
    } catch {
      break;
    }
  }
  return { ok: true, value: value === null ? {} : value };
}
