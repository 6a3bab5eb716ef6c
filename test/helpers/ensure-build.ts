import { spawnSync } from 'node:child_process';
import { mkdir, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { buildProblem, ROOT } from '../../src/build-state.mjs';

/**
 * Makes sure `dist/` is built from the current sources before a test or the bench starts what
 * `npm start` runs. A clean clone has it from `npm install`'s prepare; a checkout that changed
 * since is rebuilt once (`npm run build`). Builders take a lock folder, so two test files never
 * compile over each other and nobody runs a half-written build.
 */
const LOCK = path.join(ROOT, '.tmp', 'build.lock');
const LOCK_WAIT_MS = 5 * 60_000;
const BUILD_TIMEOUT_MS = 4 * 60_000;

export async function ensureBuilt(entry = 'src/main.js'): Promise<void> {
  await mkdir(path.dirname(LOCK), { recursive: true });
  const started = Date.now();
  for (;;) {
    try {
      await mkdir(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock older than any build is what a killed run left behind.
      const age = await stat(LOCK).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > BUILD_TIMEOUT_MS) await rmdir(LOCK).catch(() => undefined);
      if (Date.now() - started > LOCK_WAIT_MS) throw new Error(`waited ${LOCK_WAIT_MS / 1000} s for another build (${LOCK})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    if (!buildProblem(entry)) return;
    const r = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS });
    if (r.status !== 0) throw new Error(`npm run build failed (${r.status ?? r.signal}): ${`${r.stdout}${r.stderr}`.trim().slice(-2000)}`);
    const still = buildProblem(entry);
    if (still) throw new Error(`after npm run build: ${still}`);
  } finally {
    await rmdir(LOCK).catch(() => undefined);
  }
}
