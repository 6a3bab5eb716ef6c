// Runs one entry point of the compiled build (esbuild bundles src/, adapters/ and tools/ into a few
// files under dist/; packages stay in node_modules but for the few scripts/build.mjs names), so production runs plain JavaScript without a
// TypeScript loader:  node src/launch.mjs src/main.js [args…]  (the path under dist/).
// A missing or stale build is refused with one line instead of a module-not-found stack or old code.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildProblem, DIST } from './build-state.mjs';

const entry = process.argv[2];
const problem = entry ? buildProblem(entry) : 'usage: node src/launch.mjs <entry under dist/, e.g. src/main.js> [args…]';
if (problem) {
  process.stderr.write(`hermes: ${problem}\n`);
  process.exit(1);
}
const target = path.join(DIST, entry);
// The entry sees the argv of `node dist/<entry> args…`, so its own entry-point checks hold.
process.argv.splice(1, 2, target);
await import(pathToFileURL(target).href);
