import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where a bench run writes, and how a run becomes the published one.
 *
 * A local `npm run bench` once rewrote the tracked `bench/results/latest.*`, so the tree was dirty
 * and the docs check (which keeps docs/performance.md equal to latest.md) failed on the next
 * `npm test`. Now every run writes under `bench/results/local/` (git-ignored); the tracked copy and
 * the docs page change only when someone asks for it (`--publish`, or `npm run bench:publish` for
 * the last local run).
 */

export const BEGIN_MARK = '<!-- bench/results/latest.md: begin -->';
export const END_MARK = '<!-- bench/results/latest.md: end -->';

export interface ResultPaths {
  /** Tracked: bench/results (latest.* and timestamped copies of published runs). */
  tracked: string;
  /** Ignored: bench/results/local (every run lands here first). */
  local: string;
  /** The docs page that shows latest.md between the markers. */
  docsPage: string;
}

export function resultPaths(benchDir: string): ResultPaths {
  const tracked = path.join(benchDir, 'results');
  return { tracked, local: path.join(tracked, 'local'), docsPage: path.join(benchDir, '..', 'docs', 'performance.md') };
}

/** The page with `md` between the markers; throws with the fix when the markers are gone. */
export function pasteIntoDocs(page: string, md: string): string {
  const begin = page.indexOf(BEGIN_MARK);
  const end = page.indexOf(END_MARK);
  if (begin < 0 || end < begin) throw new Error(`the docs page lost its "${BEGIN_MARK}" / "${END_MARK}" markers: put them back around the results section`);
  return `${page.slice(0, begin + BEGIN_MARK.length)}\n${md.trim()}\n${page.slice(end)}`;
}

/**
 * Copies the last local run (latest.json/md and its timestamped copies) to the tracked folder and
 * pastes latest.md into the docs page. Returns the files it wrote.
 */
export async function publishLatest(paths: ResultPaths): Promise<string[]> {
  const json = await readFile(path.join(paths.local, 'latest.json'), 'utf8').catch(() => {
    throw new Error(`no local run to publish in ${paths.local}: run "npm run bench" first`);
  });
  const md = await readFile(path.join(paths.local, 'latest.md'), 'utf8');
  const startedAt = (JSON.parse(json) as { startedAt?: unknown }).startedAt;
  if (typeof startedAt !== 'string') throw new Error(`${path.join(paths.local, 'latest.json')} has no startedAt: not a bench result`);
  const stamp = startedAt.replace(/[:.]/g, '-');
  await mkdir(paths.tracked, { recursive: true });
  const written: string[] = [];
  const texts: Record<string, string> = { 'latest.json': json, 'latest.md': md, [`${stamp}.json`]: json, [`${stamp}.md`]: md };
  for (const [name, text] of Object.entries(texts)) {
    const to = path.join(paths.tracked, name);
    await writeFile(to, text);
    written.push(to);
  }
  await writeFile(paths.docsPage, pasteIntoDocs(await readFile(paths.docsPage, 'utf8'), md));
  written.push(paths.docsPage);
  return written;
}
