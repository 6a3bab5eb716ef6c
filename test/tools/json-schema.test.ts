import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inputJsonSchema, toToolSpec } from '../../src/capabilities/toolkit/json-schema.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';

const tool = defineTool({
  name: 'demo',
  description: 'A demo tool',
  input: z.object({
    url: z.string().describe('Where to send it'),
    count: z.number().int().min(1).optional().describe('How many'),
    mode: z.enum(['json', 'form']).default('json'),
    headers: z.record(z.string(), z.string()).optional(),
    nested: z.object({ flag: z.boolean() }).optional(),
  }),
  async run() {
    return 'ok';
  },
});

describe('toToolSpec', () => {
  it('describes the input as a closed object with only required fields required', () => {
    const spec = toToolSpec(tool);
    expect(spec.name).toBe('demo');
    expect(spec.description).toBe('A demo tool');
    const p = spec.parameters as Record<string, any>;
    expect(p.$schema).toBeUndefined();
    expect(p.type).toBe('object');
    expect(p.additionalProperties).toBe(false);
    expect(p.required).toEqual(['url']);
    expect(p.properties.url).toEqual({ type: 'string', description: 'Where to send it' });
    expect(p.properties.count).toEqual({ type: 'integer', minimum: 1, description: 'How many' });
    expect(p.properties.mode.enum).toEqual(['json', 'form']);
    expect(p.properties.nested.additionalProperties).toBe(false);
    expect(p.properties.headers.propertyNames).toBeUndefined();
    expect(p.properties.headers.additionalProperties).toEqual({ type: 'string' });
  });

  it('strict mode lists every field as required and makes optional ones nullable', () => {
    const p = toToolSpec(tool, { strict: true }).parameters as Record<string, any>;
    expect(p.required).toEqual(['url', 'count', 'mode', 'headers', 'nested']);
    expect(p.properties.url.type).toBe('string');
    expect(p.properties.count.type).toEqual(['integer', 'null']);
    expect(p.properties.mode.type).toEqual(['string', 'null']);
    expect(p.properties.mode.enum).toEqual(['json', 'form', null]);
    expect(p.properties.mode.default).toBeUndefined();
    expect(p.properties.nested.type).toEqual(['object', 'null']);
    expect(p.properties.nested.required).toEqual(['flag']);
  });

  it('gives an argument-less tool an empty closed object', () => {
    const none = defineTool({ name: 'none', description: 'x', input: z.object({}), run: async () => 'ok' });
    expect(toToolSpec(none).parameters).toEqual({ type: 'object', properties: {}, additionalProperties: false });
  });

  it('refuses a tool whose input is not an object', () => {
    const bad = defineTool({ name: 'bad', description: 'x', input: z.string(), run: async () => 'ok' });
    expect(() => inputJsonSchema(bad)).toThrow(/must be a z.object/);
  });

  it('returns a copy the caller may change without affecting later specs', () => {
    const first = toToolSpec(tool).parameters as Record<string, any>;
    first.required.push('mutated');
    expect((toToolSpec(tool).parameters as Record<string, any>).required).toEqual(['url']);
  });
});
