import { parseLenientJson } from '../../runtime/provider/lenient-json.js';

/**
 * Reads the arguments text a model produced into a value. Some models (and some servers' tool
 * parsers) JSON-encode the arguments twice, so a JSON string that itself holds an object or
 * array is unwrapped; an empty or `null` argument list means "no arguments"; near-JSON (trailing
 * commas, single quotes, unquoted keys, comments) is repaired when nothing was cut off.
 */

export type ParsedArgs = { ok: true; value: unknown } | { ok: false; problem: string };

const MAX_UNWRAP = 3;

export function parseArgs(raw: unknown): ParsedArgs {
  if (typeof raw !== 'string') return { ok: true, value: raw ?? {} };
  const text = raw.trim();
  if (text === '' || text === 'null') return { ok: true, value: {} };
  const parsed = parseLenientJson(text);
  if (!parsed.ok) return { ok: false, problem: parsed.problem };
  let value = parsed.value;
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
