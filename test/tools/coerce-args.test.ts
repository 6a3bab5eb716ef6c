import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { coerceArgs } from '../../src/capabilities/toolkit/coerce-args.js';
import { inputJsonSchema } from '../../src/capabilities/toolkit/json-schema.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';

const schemaOf = (input: z.ZodObject) => inputJsonSchema(defineTool({ name: 't', description: 't', input, run: async () => '' }));

describe('coerceArgs', () => {
  const schema = schemaOf(
    z.object({
      n: z.number(),
      i: z.number().int().optional(),
      b: z.boolean().optional(),
      s: z.string().optional(),
      list: z.array(z.number()).optional(),
      obj: z.object({ x: z.number() }).optional(),
      either: z.union([z.number(), z.boolean()]).optional(),
    }),
  );

  it('turns numeric and boolean strings into numbers and booleans where the schema expects them', () => {
    expect(coerceArgs({ n: '3.14', i: ' 42 ', b: 'TRUE', either: 'false' }, schema)).toEqual({ n: 3.14, i: 42, b: true, either: false });
    expect(coerceArgs({ n: '-1e3' }, schema)).toEqual({ n: -1000 });
  });

  it('leaves strings alone where a string is expected, and non-numbers alone where a number is', () => {
    expect(coerceArgs({ n: 'three', s: '3.14' }, schema)).toEqual({ n: 'three', s: '3.14' });
    expect(coerceArgs({ n: '0x10' }, schema)).toEqual({ n: '0x10' });
  });

  it('drops null and "null" for optional fields, keeps them for required ones', () => {
    expect(coerceArgs({ n: 1, i: null, b: 'null', s: null }, schema)).toEqual({ n: 1 });
    expect(coerceArgs({ n: null }, schema)).toEqual({ n: null });
  });

  it('keeps "null" for an optional string (it may be the text the model meant)', () => {
    expect(coerceArgs({ n: 1, s: 'null' }, schema)).toEqual({ n: 1, s: 'null' });
  });

  it('recurses into arrays and nested objects, and unwraps JSON-encoded nested values', () => {
    expect(coerceArgs({ n: 1, list: ['1', '2.5'], obj: { x: '7' } }, schema)).toEqual({ n: 1, list: [1, 2.5], obj: { x: 7 } });
    expect(coerceArgs({ n: 1, list: '[1, "2"]', obj: '{"x": "3"}' }, schema)).toEqual({ n: 1, list: [1, 2], obj: { x: 3 } });
  });

  it('reads a bare value as the only parameter of a one-parameter tool, and only then', () => {
    const one = schemaOf(z.object({ expression: z.string() }));
    expect(coerceArgs('2+2', one)).toEqual({ expression: '2+2' });
    expect(coerceArgs('2+2', schema)).toBe('2+2');
  });

  it('does not mutate its input', () => {
    const input = { n: '1' };
    coerceArgs(input, schema);
    expect(input).toEqual({ n: '1' });
  });
});
