import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { asciiOnly } from '../../scripts/ascii-chunks.mjs';

// The build's last step (scripts/ascii-chunks.mjs): esbuild's output made ASCII-only without
// changing what any of it means. Each case is run before and after, and the values compared.
const run = (code: string): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  vm.runInNewContext(code, { out, tag: (strings: TemplateStringsArray) => strings.raw.join('|') });
  return out;
};

describe('asciiOnly', () => {
  it('escapes comments, regular expressions (with and without the u flag), strings and untagged templates to the same values', () => {
    const code = [
      'out.money = "€ 5, £ 6, ₹ 7".replace(/[$€£¥₹]\\s?/g, ""); // an em dash — in a comment',
      'out.cases = { /* café */ hand: /👋+/u.exec("x👋👋")[0].length, unit: /[👋]/.test("\\uD83D"), ident: /\\é/.test("é") };',
      'out.text = `plain — ${1 + 1} ✓`; out.escaped = "a\\é" + \'b\\\\é\';',
    ].join('\n');
    const { code: ascii, kept } = asciiOnly(code);
    expect(ascii).toMatch(/^[\x00-\x7F]*$/);
    expect(kept).toBe(0);
    expect(run(ascii)).toEqual(run(code));
    expect(run(code)).toMatchObject({ money: '5, 6, 7', cases: { hand: 4, unit: true, ident: true }, text: 'plain — 2 ✓', escaped: 'aéb\\é' });
  });

  it('leaves a tagged template as it is: its tag may read the raw text', () => {
    const code = 'out.raw = tag`a — ${1} · b`; // but this — goes';
    const { code: ascii, kept } = asciiOnly(code);
    expect(kept).toBe(2);
    expect(ascii).toBe('out.raw = tag`a — ${1} · b`; // but this \\u2014 goes');
    expect(run(ascii)).toEqual({ raw: 'a — | · b' });
  });

  it('returns ASCII code unchanged', () => {
    const code = 'const a = /[a-z]/; // plain';
    expect(asciiOnly(code)).toEqual({ code, kept: 0 });
  });
});
