#!/usr/bin/env node
// `npm run build`: compiles src/, adapters/ and tools/ into dist/ with esbuild (ESM, split into
// chunks, so what loads lazily stays in chunks of its own). Packages stay in node_modules and are
// imported from there, except the few in BUNDLED: pure-JavaScript packages that every start
// loads and that ship as hundreds of small files (kysely 263, openai 115, zod 95). Node resolves,
// reads and compiles each file of a package on its own; the same code in one of our chunks loads
// in a fraction of the CPU (docs/performance.md, "Round 3: start-up and idle memory").
// A package belongs here only if it reads no files next to its own (no native module, no worker
// file, no templates) and no external package exchanges its objects with ours (an instanceof
// across two copies fails). The MCP SDK, loaded only when MCP servers are configured, brings its
// own zod from node_modules; it validates with its own schemas and is handed none of ours.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { asciiOutput } from './ascii-chunks.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLED = new Set(['kysely', 'openai', 'zod']);
const ENTRIES = ['src/main.ts', 'src/runtime/trace/trace-cli.ts', 'src/operations/stats/stats-cli.ts', 'src/capabilities/mcp/mcp-cli.ts'];

/** `zod/v4/core` → `zod`, `@scope/name/sub` → `@scope/name`. */
const packageOf = (spec) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

export const packagesExternal = {
  name: 'packages-external-except-bundled',
  setup(b) {
    // A bare specifier (not relative, not absolute, not node:) names a package.
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return undefined;
      return BUNDLED.has(packageOf(args.path)) ? undefined : { path: args.path, external: true };
    });
  },
};

/**
 * How the bot is compiled, apart from what goes in and where it goes. The bench compiles its bot
 * process with these too (bench/compile.ts), so what it measures loads what `npm start` loads.
 */
export const BOT_BUILD_OPTIONS = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  keepNames: true,
  // The written chunks made ASCII-only (ascii-chunks.mjs), which it finds through the metafile.
  metafile: true,
  plugins: [packagesExternal, asciiOutput],
};

// Run as `node scripts/build.mjs`, it builds dist/; imported, it only lends its options.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  rmSync(path.join(ROOT, 'dist'), { recursive: true, force: true });
  const r = await build({
    ...BOT_BUILD_OPTIONS,
    absWorkingDir: ROOT,
    entryPoints: ENTRIES,
    sourcemap: true,
    metafile: true,
    outbase: '.',
    outdir: 'dist',
    logLevel: 'warning',
  });
  const { writeFileSync } = await import('node:fs');
  const { checkedFiles, INPUTS_FILE } = await import('../src/build-state.mjs');
  writeFileSync(path.join(ROOT, 'dist', 'meta.json'), JSON.stringify(r.metafile));
  // What src/launch.mjs checks the build's age against, without parsing the metafile at each start.
  writeFileSync(path.join(ROOT, 'dist', INPUTS_FILE), JSON.stringify({ files: [...checkedFiles(Object.keys(r.metafile.inputs))] }));
}
