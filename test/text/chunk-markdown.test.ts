import { describe, expect, it } from 'vitest';
import { chunkMarkdown, stripPartMarker } from '../../src/basics/text/chunk-markdown.js';

const DISCORD_MESSAGE_LIMIT = 2000;
const splitMessage = (text: string, limit = DISCORD_MESSAGE_LIMIT) => chunkMarkdown(text, { limit });
const chunkMrkdwn = (text: string, limit = 3800) => chunkMarkdown(text, { limit, partMarkers: true });

/** The text without fence lines and line breaks: what must survive splitting, in order. */
function content(s: string): string {
  return s.replace(/^\s{0,3}```.*$/gm, '').replace(/\n/g, '');
}
function countFenceLines(s: string): number {
  return s.split('\n').filter((l) => /^\s{0,3}```/.test(l)).length;
}

describe('chunkMarkdown without part markers (Discord)', () => {
  it('keeps a short text as one part', () => {
    expect(splitMessage('hello **world**')).toEqual(['hello **world**']);
  });

  it('returns nothing for whitespace', () => {
    expect(splitMessage('  \n ')).toEqual([]);
  });

  it('splits 10,000 characters of prose whole and in order, every part within the limit', () => {
    const words = Array.from({ length: 2100 }, (_, i) => `w${i}`);
    const text = words.join(' ').replace(/(w\d*9) /g, '$1\n');
    expect(text.length).toBeGreaterThan(10_000);
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThanOrEqual(6);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(DISCORD_MESSAGE_LIMIT);
    expect(parts.join('')).toBe(text);
  });

  it('cuts a single line without spaces and loses nothing', () => {
    const text = 'x'.repeat(4500);
    const parts = splitMessage(text);
    expect(parts.every((p) => p.length <= 2000)).toBe(true);
    expect(parts.join('')).toBe(text);
  });

  it('prefers to cut a long line after a space', () => {
    const text = `${'a'.repeat(1500)} ${'b'.repeat(1500)}`;
    const parts = splitMessage(text);
    expect(parts[0]).toBe(`${'a'.repeat(1500)} `);
    expect(parts.join('')).toBe(text);
  });

  it('closes and reopens a code block that crosses a split', () => {
    const code = Array.from({ length: 150 }, (_, i) => `const v${i} = ${i}; // line ${i}`).join('\n');
    const text = `Here is the code:\n\`\`\`ts\n${code}\n\`\`\`\nDone.`;
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(2000);
      expect(countFenceLines(p) % 2).toBe(0);
    }
    expect(parts[1]!.startsWith('```ts\n')).toBe(true);
    expect(content(parts.join('\n'))).toBe(content(text));
  });

  it('treats a one-line ```code``` as closed', () => {
    const text = `\`\`\`inline\`\`\`\n${'y '.repeat(1200)}`;
    const parts = splitMessage(text);
    expect(parts.length).toBe(2);
    expect(parts[1]!.startsWith('```')).toBe(false);
    expect(parts.join('')).toBe(text);
  });

  it('keeps working with a small limit and many fences', () => {
    const block = '```\nabc def ghi\n```\ntext between blocks\n';
    const text = block.repeat(40);
    const parts = splitMessage(text, 60);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(60);
      expect(countFenceLines(p) % 2).toBe(0);
    }
    expect(content(parts.join('\n'))).toBe(content(text));
  });
});

/** Drops markers and the fences the splitter added, then rejoins. */
function words(parts: string[]): string[] {
  return parts
    .map(stripPartMarker)
    .join('\n')
    .split(/\s+/)
    .filter((w) => w && w !== '```');
}

describe('chunkMarkdown with part markers (Slack)', () => {
  it('leaves short text alone, without a marker', () => {
    expect(chunkMrkdwn('hello')).toEqual(['hello']);
    expect(chunkMrkdwn(' \n ')).toEqual([]);
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
