import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BOT_BUILD_OPTIONS } from '../scripts/build.mjs';
import { BENCH_DIR } from './peer-loader.js';

/**
 * Compiles a bench child process with the options `npm run build` compiles the bot with
 * (scripts/build.mjs: our code in chunks, kysely, openai and zod bundled in, every other package
 * left in node_modules), so the process under measurement runs the JavaScript `npm start` runs:
 * no TypeScript loader thread, no transform cache in its memory or its CPU profile, and the same
 * packages loaded from the same places. The bundle goes under .tmp/bench/, inside the repository,
 * so its imports of packages resolve to the same node_modules.
 */
export async function compileBenchEntry(file: string): Promise<string> {
  const name = path.basename(file, '.ts');
  // Split like the build: a dynamic import() stays a separate chunk, so packages it imports load
  // when it runs, not with the entry (the bot process defers Bolt's Socket Mode client as main.ts does).
  const outdir = path.join(BENCH_DIR, '..', '.tmp', 'bench', name);
  await build({
    ...BOT_BUILD_OPTIONS,
    entryPoints: [path.join(BENCH_DIR, file)],
    outdir,
    outExtension: { '.js': '.mjs' },
    sourcemap: false,
    logLevel: 'warning',
  });
  return path.join(outdir, `${name}.mjs`);
}

/**
 * The Node options `npm start` passes (package.json's start script: `node <options> src/launch.mjs …`),
 * so a bench child runs with the same V8 heap settings as the bot in production.
 */
export function startNodeOptions(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(BENCH_DIR, '..', 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const words = (pkg.scripts?.start ?? '').split(/\s+/).filter(Boolean);
  if (words[0] !== 'node') return [];
  const options: string[] = [];
  for (const w of words.slice(1)) {
    if (!w.startsWith('-')) break;
    options.push(w);
  }
  return options;
}
