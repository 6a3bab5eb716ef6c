import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './docs-facts.js';

/**
 * No Docker engine runs here, so the Dockerfile is checked by reading: every file its build stage
 * copies from the checkout exists and is not excluded by .dockerignore, and the build script that
 * `npm ci` runs in that stage (the `prepare` script → `npm run build`) has its files copied.
 */

const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');

/** COPY sources taken from the build context (not `--from=` another stage). */
function contextCopies(dockerfile: string): string[] {
  const sources: string[] = [];
  for (const line of dockerfile.split('\n')) {
    const m = /^COPY\s+(.*)$/.exec(line.trim());
    if (!m || /--from=/.test(m[1]!)) continue;
    const words = m[1]!.split(/\s+/).filter((w) => !w.startsWith('--'));
    sources.push(...words.slice(0, -1));
  }
  return sources;
}

/** Whether .dockerignore leaves a path in the build context: the last matching line decides. */
function keptByDockerignore(ignore: string, file: string): boolean {
  let kept = true;
  for (const raw of ignore.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    const pattern = negate ? line.slice(1) : line;
    const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
    if (re.test(file)) kept = negate;
  }
  return kept;
}

describe('Dockerfile, checked by reading', () => {
  const dockerfile = read('Dockerfile');
  const ignore = read('.dockerignore');
  const copies = contextCopies(dockerfile);

  it('reads the COPY lines and the ignore rules as Docker does (sanity)', () => {
    expect(copies).toContain('package.json');
    expect(keptByDockerignore('test\n', 'test/a.ts')).toBe(false);
    expect(keptByDockerignore('test\n!test/a.ts\n', 'test/a.ts')).toBe(true);
    expect(keptByDockerignore('*.sqlite*\n', 'data.sqlite-wal')).toBe(false);
  });

  it('every file the build stage copies exists and is in the build context', () => {
    const problems = copies.flatMap((src) => [
      ...(existsSync(path.join(ROOT, src)) ? [] : [`${src} does not exist`]),
      ...(keptByDockerignore(ignore, src) ? [] : [`${src} is excluded by .dockerignore`]),
    ]);
    expect(problems).toEqual([]);
  });

  it('the build script npm ci runs in the build stage has its files copied', () => {
    const build = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.build!;
    const files = build.split(/\s+/).filter((w) => /\.(mjs|js|ts)$/.test(w) && existsSync(path.join(ROOT, w)));
    const missing = files.filter((f) => !copies.some((src) => f === src || f.startsWith(`${src.replace(/\/$/, '')}/`) || (src.endsWith('/') && f.startsWith(src))));
    expect(missing).toEqual([]);
  });
});
