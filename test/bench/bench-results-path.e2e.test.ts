import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCH_DIR } from '../../bench/peer-loader.js';
import { BEGIN_MARK, END_MARK, pasteIntoDocs, publishLatest, resultPaths } from '../../bench/results-paths.js';

/**
 * A local bench run must leave the git tree clean (it once rewrote the tracked latest.* and the docs
 * check then failed); the tracked copy and docs/performance.md change only through publishing.
 */
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-publish-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ignored = (rel: string): boolean => {
  try {
    execFileSync('git', ['check-ignore', '-q', rel], { cwd: path.join(BENCH_DIR, '..') });
    return true;
  } catch {
    return false;
  }
};

describe('bench results paths', () => {
  it('a run writes where git ignores it; the published copy is tracked', () => {
    const paths = resultPaths(BENCH_DIR);
    const root = path.join(BENCH_DIR, '..');
    expect(path.relative(root, paths.local)).toBe(path.join('bench', 'results', 'local'));
    expect(ignored('bench/results/local/latest.md')).toBe(true);
    expect(ignored('bench/results/local/2026-12-02T01-29-27-513Z.json')).toBe(true);
    expect(ignored('bench/results/latest.md')).toBe(false);
    expect(path.relative(root, paths.docsPage)).toBe(path.join('docs', 'performance.md'));
  });

  it('publishing copies the last local run and pastes it into the docs page between the markers', async () => {
    const bench = path.join(tmp, 'bench');
    const paths = resultPaths(bench);
    mkdirSync(paths.local, { recursive: true });
    mkdirSync(path.dirname(paths.docsPage), { recursive: true });
    const md = '### Benchmark results (quick run)\n\n| a | b |\n';
    const json = JSON.stringify({ schema: 'hermes-bench/1', startedAt: '2026-12-02T15:00:01.234Z' });
    writeFileSync(path.join(paths.local, 'latest.md'), md);
    writeFileSync(path.join(paths.local, 'latest.json'), json);
    writeFileSync(paths.docsPage, `# Performance\n\n${BEGIN_MARK}\nold table\n${END_MARK}\n\n## After\n`);

    const written = await publishLatest(paths);

    expect(readFileSync(path.join(paths.tracked, 'latest.md'), 'utf8')).toBe(md);
    expect(readFileSync(path.join(paths.tracked, '2026-12-02T15-00-01-234Z.json'), 'utf8')).toBe(json);
    const page = readFileSync(paths.docsPage, 'utf8');
    expect(page).toBe(`# Performance\n\n${BEGIN_MARK}\n${md.trim()}\n${END_MARK}\n\n## After\n`);
    expect(written).toContain(paths.docsPage);
  });

  it('says what to do when there is nothing to publish or the markers are gone', async () => {
    const paths = resultPaths(path.join(tmp, 'empty', 'bench'));
    await expect(publishLatest(paths)).rejects.toThrow(/run "npm run bench" first/);
    expect(() => pasteIntoDocs('# no markers', 'x')).toThrow(/lost its/);
  });
});
