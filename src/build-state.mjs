// Whether the compiled build (dist/, made by `npm run build`, which `npm install` runs through
// `prepare`) can run an entry point: it exists, and no source file it was bundled from changed
// after it was built (a `git pull` without `npm install`). esbuild's metafile (dist/meta.json)
// lists those sources; the build also writes their short list to dist/build-inputs.json (the
// metafile is ~500 KB of JSON, 20-25 ms of CPU to parse at every start; the list is 15 KB).
// Plain JavaScript on purpose: src/launch.mjs runs it before anything is built; the bench and the
// tests use it too (types in build-state.d.mts).
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(ROOT, 'dist');

/** Written by scripts/build.mjs next to meta.json: `{ "files": [...] }`, what checkedFiles() makes of its inputs. */
export const INPUTS_FILE = 'build-inputs.json';

const MISSING = (what) => `not built yet (${what} is missing): run \`npm install\` (or \`npm run build\`) first.`;

/**
 * Undefined when `dist/<entry>` (e.g. `src/main.js`) is built and current; otherwise one line
 * saying what is wrong and the command that fixes it.
 */
export function buildProblem(entry, root = ROOT) {
  const target = path.join(root, 'dist', entry);
  const metafile = path.join(root, 'dist', 'meta.json');
  const shown = (p) => path.relative(process.cwd(), p) || p;
  if (!statSync(target, { throwIfNoEntry: false })) return MISSING(shown(target));
  // The short list when the build wrote one, else the metafile (a build made before the list was).
  const list = path.join(root, 'dist', INPUTS_FILE);
  const listed = statSync(list, { throwIfNoEntry: false });
  const source = listed ? list : metafile;
  const built = listed ?? statSync(metafile, { throwIfNoEntry: false });
  if (!built) return MISSING(shown(metafile));
  let files;
  try {
    const read = JSON.parse(readFileSync(source, 'utf8'));
    files = listed ? read.files : checkedFiles(Object.keys(read.inputs ?? {}));
    if (!Array.isArray(files) && !(files instanceof Set)) throw new Error('no list');
  } catch {
    return listed
      ? `the build is damaged (${shown(list)} is not the list of its sources): run \`npm run build\` and start again.`
      : `the build is damaged (${shown(metafile)} is not esbuild's metafile): run \`npm run build\` and start again.`;
  }
  for (const input of files) {
    // A source that is not there (an image that ships only dist/) cannot be newer than the build.
    const changed = statSync(path.join(root, input), { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (changed > built.mtimeMs) return `the build is older than ${input}: run \`npm run build\` (or \`npm install\`) and start again.`;
  }
  return undefined;
}

/**
 * The files whose age says whether the build is current: our sources, and for a package the build
 * bundles (scripts/build.mjs) its package.json rather than each of its hundreds of files (npm
 * writes the package anew when it installs another version), so the check stays a few ms.
 */
export function checkedFiles(inputs) {
  const files = new Set();
  for (const input of inputs) {
    const pkg = /^(.*?node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    files.add(pkg ? `${pkg[1]}/package.json` : input);
  }
  return files;
}
