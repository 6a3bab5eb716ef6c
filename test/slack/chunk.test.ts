import { describe, expect, it } from 'vitest';
import { chunkMrkdwn, stripPartMarker } from '../../adapters/slack/chunk.js';

/** Drops markers and the fences the splitter added, then rejoins. */
function words(parts: string[]): string[] {
  return parts
    .map(stripPartMarker)
    .join('\n')
    .split(/\s+/)
    .filter((w) => w && w !== '```');
}

describe('chunkMrkdwn', () => {
  it('leaves short text alone, without a marker', () => {
    expect(chunkMrkdwn('hello')).toEqual(['hello']);
  });

  it('splits long text within the limit, in order, nothing lost', () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} ${'x'.repeat(i % 50)}`);
    const text = lines.join('\n');
    const parts = chunkMrkdwn(text, 1000);
    expect(parts.length).toBeGreaterThan(10);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(1000);
    const got = parts.map(stripPartMarker).join('\n').split('\n');
    expect(got).toEqual(lines);
  });

  it('puts the part marker on its own line', () => {
    const parts = chunkMrkdwn('word '.repeat(1000), 500);
    parts.forEach((p, i) => expect(p.split('\n').at(-1)).toBe(`(${i + 1}/${parts.length})`));
  });

  it('closes and reopens a code block cut in the middle', () => {
    const code = Array.from({ length: 300 }, (_, i) => `let v${i} = ${i};`).join('\n');
    const text = `intro\n\`\`\`\n${code}\n\`\`\`\noutro`;
    const parts = chunkMrkdwn(text, 800);
    expect(parts.length).toBeGreaterThan(3);
    for (const p of parts) {
      const fences = stripPartMarker(p).split('\n').filter((l) => l === '```').length;
      expect(fences % 2).toBe(0);
    }
    expect(words(parts)).toEqual(text.split(/\s+/).filter((w) => w !== '```'));
  });

  it('hard-splits a line with no breaks without losing characters', () => {
    const text = 'a'.repeat(5000);
    const parts = chunkMrkdwn(text, 1000);
    expect(parts.map(stripPartMarker).join('')).toBe(text);
  });

  it('never splits a surrogate pair', () => {
    const text = '😀'.repeat(3000);
    const parts = chunkMrkdwn(text, 1001);
    expect(parts.map(stripPartMarker).join('')).toBe(text);
    for (const p of parts) expect(stripPartMarker(p)).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  });
});
