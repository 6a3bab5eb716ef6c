import { jsonrepair } from 'jsonrepair';

/**
 * Tool arguments as small open models write them: `{"timezone": "Asia/Shanghai",}` (a trailing
 * comma), single quotes, unquoted keys, comments. Rejecting those wastes a step and often loops,
 * so a well-kept repair library reads them. What it must not do is guess: text that is cut off
 * (an unclosed brace or string, as when the model ran out of tokens) could have meant more, so
 * it is still an error the model sees. The rule is structural: only a complete object, every
 * string and bracket closed, is repaired.
 */

export type LenientParse = { ok: true; value: unknown; repaired: boolean } | { ok: false; problem: string };

export function parseLenientJson(text: string): LenientParse {
  try {
    return { ok: true, value: JSON.parse(text) as unknown, repaired: false };
  } catch (err) {
    const problem = (err as Error).message;
    if (!isCompleteObject(text)) return { ok: false, problem };
    try {
      const value = JSON.parse(jsonrepair(text)) as unknown;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, problem };
      return { ok: true, value, repaired: true };
    } catch {
      return { ok: false, problem };
    }
  }
}

/** `{ … }` with every string, bracket and comment closed: nothing was cut off. Bounded by the text's length. */
function isCompleteObject(text: string): boolean {
  const t = text.trim();
  if (!t.startsWith('{') || !t.endsWith('}')) return false;
  const stack: string[] = [];
  let quote = '';
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '/' && t[i + 1] === '/') {
      const end = t.indexOf('\n', i);
      if (end < 0) return false;
      i = end;
    } else if (c === '/' && t[i + 1] === '*') {
      const end = t.indexOf('*/', i + 2);
      if (end < 0) return false;
      i = end + 1;
    } else if (c === '{' || c === '[') stack.push(c === '{' ? '}' : ']');
    else if (c === '}' || c === ']') {
      if (stack.pop() !== c) return false;
      if (stack.length === 0 && i !== t.length - 1) return false; // a second value after the object
    }
  }
  return quote === '' && stack.length === 0;
}
