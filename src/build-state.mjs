// Whether the compiled build (dist/, made by `npm run build`, which `npm install` runs through
// `prepare`) can run an entry point: it exists and no TypeScript source it was compiled from changed
// after it was built (a `git pull` without `npm install`). Plain JavaScript on purpose: src/launch.mjs
// runs it before anything is built; the bench and the tests use it too (types in build-state.d.mts).
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(ROOT, 'dist');

/** The first compiled file whose TypeScript source changed after `builtAt`; bounded by dist's size. */
function staleSource(root, dir, builtAt) {
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, item.name);
    if (item.isDirectory()) {
      const found = staleSource(root, full, builtAt);
      if (found) return found;
    } else if (item.name.endsWith('.js')) {
      const source = path.join(root, path.relative(path.join(root, 'dist'), full)).replace(/\.js$/, '.ts');
      // A source that is not there (an image that ships only dist/) cannot be newer than the build.
      const changed = statSync(source, { throwIfNoEntry: false })?.mtimeMs ?? 0;
      if (changed > builtAt) return source;
    }
  }
  return undefined;
}

/**
 * Undefined when `dist/<entry>` (e.g. `src/main.js`) is built and current; otherwise one line
 * saying what is wrong and the command that fixes it.
 */
export function buildProblem(entry, root = ROOT) {
  const target = path.join(root, 'dist', entry);
  const built = statSync(target, { throwIfNoEntry: false });
  if (!built) return `not built yet (${path.relative(process.cwd(), target) || target} is missing): run \`npm install\` (or \`npm run build\`) first.`;
  const stale = staleSource(root, path.join(root, 'dist'), built.mtimeMs);
  if (stale) return `the build is older than ${path.relative(root, stale)}: run \`npm run build\` (or \`npm install\`) and start again.`;
  return undefined;
}
