import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { formatInvalidArgs, formatPath } from '../../src/capabilities/toolkit/format-issues.js';

describe('formatInvalidArgs', () => {
  it('writes one path: message line per issue, unions expanded, no stack', () => {
    const schema = z.object({
      url: z.string(),
      method: z.enum(['POST', 'PUT']),
      items: z.array(z.object({ qty: z.number() })),
      value: z.union([z.number(), z.boolean()]),
    });
    const r = schema.safeParse({ url: 5, method: 'GET', items: [{ qty: 'x' }], value: 'x' });
    expect(r.success).toBe(false);
    const text = formatInvalidArgs('send_it', r.error!.issues);
    const lines = text.split('\n');
    expect(lines[0]).toBe('Invalid arguments for send_it:');
    expect(lines).toContain('url: Invalid input: expected string, received number');
    expect(lines).toContain('method: Invalid option: expected one of "POST"|"PUT"');
    expect(lines).toContain('items[0].qty: Invalid input: expected number, received string');
    expect(text).toMatch(/^value: .*expected number.*\|.*expected boolean/m);
    expect(lines.at(-1)).toBe('Fix these and call send_it again.');
    expect(text).not.toMatch(/\bat .*\.ts:\d+/);
  });

  it('names the root and unknown keys', () => {
    const r = z.object({ a: z.string() }).strict().safeParse({ a: 'x', b: 1 });
    expect(formatInvalidArgs('t', r.error!.issues)).toContain('(root): unknown field(s) "b"; remove them');
    expect(formatPath([])).toBe('(root)');
    expect(formatPath(['a', 2, 'b'])).toBe('a[2].b');
  });
});
