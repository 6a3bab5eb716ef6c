import * as z from 'zod';
import type { ToolSpec } from '../../runtime/provider/provider.js';
import type { AnyTool } from './tool-api.js';
import { isRecord } from '../../basics/values.js';

/**
 * The JSON Schema a model sees for a tool, derived from the tool's zod input so the two never
 * disagree. We describe the *input* side (a field with a default is optional to the model) and
 * strip what only adds noise or trips strict validators: `$schema`, the ±2^53 bounds zod adds
 * to `.int()`, and `propertyNames` on records.
 */

export type JsonSchema = Record<string, unknown>;

export interface ToolSpecOptions {
  /**
   * OpenAI strict mode wants every property listed in `required` and optional ones nullable.
   * The executor turns a `null` for an optional field back into "absent", so both forms validate.
   */
  strict?: boolean;
}

const cache = new WeakMap<z.ZodType, JsonSchema>();

/** The cleaned (non-strict) JSON Schema of a tool's input; throws when the input is not an object. */
export function inputJsonSchema(tool: AnyTool): JsonSchema {
  if (tool.parameters) {
    if (tool.parameters.type !== 'object') throw new Error(`tool "${tool.name}": its input schema must be an object so the model gets named parameters`);
    return tool.parameters;
  }
  const input = tool.input as z.ZodType;
  const hit = cache.get(input);
  if (hit) return hit;
  const raw = z.toJSONSchema(input, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as JsonSchema;
  delete raw.$schema;
  const schema = clean(raw);
  if (schema.type !== 'object') {
    throw new Error(`tool "${tool.name}": input must be a z.object(...) so the model gets named parameters`);
  }
  cache.set(input, schema);
  return schema;
}

/** The tool as the model sees it: name, description and parameters. */
export function toToolSpec(tool: AnyTool, options: ToolSpecOptions = {}): ToolSpec {
  const schema = inputJsonSchema(tool);
  return {
    name: tool.name,
    description: tool.description,
    parameters: options.strict ? toStrict(schema) : structuredClone(schema),
  };
}

const SAFE_INT = Number.MAX_SAFE_INTEGER;

function clean(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'maximum' && value === SAFE_INT) continue;
    if (key === 'minimum' && value === -SAFE_INT) continue;
    if (key === 'propertyNames') continue;
    out[key] = cleanValue(key, value);
  }
  if (out.type === 'object' && isRecord(out.properties) && out.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  if (out.type === 'object' && out.properties === undefined && out.additionalProperties === undefined) {
    // An argument-less tool: an empty, closed object.
    out.properties = {};
    out.additionalProperties = false;
  }
  return out;
}

function cleanValue(key: string, value: unknown): unknown {
  if (key === 'properties' || key === '$defs' || key === 'definitions') {
    if (!isRecord(value)) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isRecord(v) ? clean(v) : v]));
  }
  if (Array.isArray(value)) return value.map((v) => (isRecord(v) ? clean(v) : v));
  if (isRecord(value) && (key === 'items' || key === 'additionalProperties' || key === 'not')) return clean(value);
  return value;
}

function toStrict(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (Array.isArray(value)) out[key] = value.map((v) => (isRecord(v) ? toStrict(v) : v));
    else if (isRecord(value) && key !== 'properties') out[key] = toStrict(value);
    else out[key] = value;
  }
  if (isRecord(node.properties)) {
    const required = new Set(Array.isArray(node.required) ? node.required : []);
    const props: JsonSchema = {};
    for (const [name, prop] of Object.entries(node.properties)) {
      if (!isRecord(prop)) continue;
      const strictProp = toStrict(prop);
      props[name] = required.has(name) ? strictProp : nullable(strictProp);
    }
    out.properties = props;
    out.required = Object.keys(props);
  }
  return out;
}

function nullable(schema: JsonSchema): JsonSchema {
  const { default: _default, ...rest } = schema;
  if (typeof rest.type === 'string') {
    return { ...rest, type: [rest.type, 'null'], ...(Array.isArray(rest.enum) ? { enum: [...rest.enum, null] } : {}) };
  }
  if (Array.isArray(rest.type)) return rest.type.includes('null') ? rest : { ...rest, type: [...rest.type, 'null'] };
  if (Array.isArray(rest.anyOf)) return { ...rest, anyOf: [...rest.anyOf, { type: 'null' }] };
  return { anyOf: [rest, { type: 'null' }] };
}
