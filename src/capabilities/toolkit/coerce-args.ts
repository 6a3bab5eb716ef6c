import { isRecord } from '../../basics/values.js';
import type { JsonSchema } from './json-schema.js';

/**
 * A lenient pass over a model's arguments before validation. Real models send `"3.14"` where a
 * number is expected, `"true"` for a boolean, `null` / `"null"` for an optional field they meant
 * to leave out (strict-mode schemas even ask for that), and nested objects JSON-encoded as strings.
 * Each of these has exactly one sensible reading, so we apply it instead of bouncing the call.
 * Anything ambiguous is left alone for the validator to report. Pure; never mutates its input.
 */

const NUMBER = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
const MAX_DEPTH = 32;

export function coerceArgs(value: unknown, schema: JsonSchema): unknown {
  return coerce(wrapBareValue(value, schema), schema, 0);
}

/**
 * A bare value (`"2+2"` instead of `{"expression": "2+2"}`) for a tool with exactly one
 * parameter can only mean that parameter.
 */
function wrapBareValue(value: unknown, schema: JsonSchema): unknown {
  if (value === null || typeof value === 'object') return value;
  const props = isRecord(schema.properties) ? Object.keys(schema.properties) : [];
  return props.length === 1 && props[0] !== undefined ? { [props[0]]: value } : value;
}

function coerce(value: unknown, schema: JsonSchema, depth: number): unknown {
  if (depth > MAX_DEPTH) return value;
  const types = typesOf(schema);
  if (typeof value === 'string' && !types.has('string')) {
    const converted = fromString(value, types);
    if (converted !== undefined) value = converted;
  }
  if (isRecord(value) && types.has('object')) return coerceObject(value, objectBranch(schema), depth);
  if (Array.isArray(value) && types.has('array')) {
    const items = arrayItems(schema);
    return items ? value.map((v) => coerce(v, items, depth + 1)) : value;
  }
  return value;
}

function coerceObject(value: Record<string, unknown>, schema: JsonSchema, depth: number): Record<string, unknown> {
  const props = isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const prop = props[key];
    if (!isRecord(prop)) {
      out[key] = v;
      continue;
    }
    const types = typesOf(prop);
    const meansAbsent = v === null ? !types.has('null') : v === 'null' && !types.has('string');
    if (!required.has(key) && meansAbsent) continue;
    out[key] = coerce(v, prop, depth + 1);
  }
  return out;
}

/** One string, read as the only non-string type the schema allows at this spot. */
function fromString(text: string, types: Set<string>): unknown {
  const trimmed = text.trim();
  if ((types.has('number') || types.has('integer')) && NUMBER.test(trimmed)) {
    const n = Number(trimmed);
    if (Number.isFinite(n)) return n;
  }
  if (types.has('boolean') && /^(true|false)$/i.test(trimmed)) return trimmed.toLowerCase() === 'true';
  if (types.has('null') && trimmed === 'null') return null;
  if ((types.has('object') && trimmed.startsWith('{')) || (types.has('array') && trimmed.startsWith('['))) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Every JSON type this schema (or any branch of an anyOf/oneOf) accepts. */
function typesOf(schema: JsonSchema): Set<string> {
  const types = new Set<string>();
  const add = (s: unknown) => {
    if (!isRecord(s)) return;
    if (typeof s.type === 'string') types.add(s.type);
    if (Array.isArray(s.type)) for (const t of s.type) if (typeof t === 'string') types.add(t);
    if (s.type === undefined && Array.isArray(s.enum)) {
      for (const e of s.enum) types.add(e === null ? 'null' : typeof e);
    }
    if (s.type === undefined && s.const !== undefined) types.add(s.const === null ? 'null' : typeof s.const);
    for (const key of ['anyOf', 'oneOf']) {
      const branches = s[key];
      if (Array.isArray(branches)) branches.forEach(add);
    }
  };
  add(schema);
  // An unconstrained schema ({}) accepts anything: treat it like string so nothing is converted.
  if (types.size === 0) types.add('string');
  return types;
}

function objectBranch(schema: JsonSchema): JsonSchema {
  if (schema.type === 'object' || (Array.isArray(schema.type) && schema.type.includes('object'))) return schema;
  for (const key of ['anyOf', 'oneOf']) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    const objects = branches.filter((b): b is JsonSchema => isRecord(b) && b.type === 'object');
    if (objects.length === 1 && objects[0]) return objects[0];
  }
  return {};
}

function arrayItems(schema: JsonSchema): JsonSchema | undefined {
  if (isRecord(schema.items)) return schema.items;
  for (const key of ['anyOf', 'oneOf']) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    const arrays = branches.filter((b): b is JsonSchema => isRecord(b) && b.type === 'array' && isRecord(b.items));
    if (arrays.length === 1 && arrays[0] && isRecord(arrays[0].items)) return arrays[0].items;
  }
  return undefined;
}
