import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * Vitest global setup: when HERMES_TEST_PG_URL is not set but PostgreSQL is installed, start a
 * throw-away cluster with the same script CI uses (.ci/postgres.sh) and stop it after the run, so
 * `npm test` exercises the PostgreSQL store wherever the server exists. The URL reaches the test
 * workers through the environment they are forked with. Without a server, the PostgreSQL tests
 * decide themselves: fail in CI, skip locally (test/helpers/postgres.ts).
 */
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.HERMES_TEST_PG_URL || !installed()) return undefined;
  const script = 'source .ci/postgres.sh && start_postgres >/dev/null && printf "%s\\n%s\\n%s\\n%s\\n" "$HERMES_TEST_PG_URL" "$PG_DIR" "$PG_BIN" "$PG_RUN_AS"';
  let out: string;
  try {
    ({ stdout: out } = await run('bash', ['-c', script], { cwd: ROOT, timeout: 120_000 }));
  } catch (err) {
    console.warn(`could not start a PostgreSQL for the tests: ${(err as Error).message}`);
    return undefined;
  }
  const [url, dir, bin, runAs] = out.split('\n');
  process.env.HERMES_TEST_PG_URL = url;
  return async () => {
    const stop = 'source .ci/postgres.sh && PG_DIR="$1" PG_BIN="$2" PG_RUN_AS="$3" stop_postgres';
    await run('bash', ['-c', stop, 'stop', dir ?? '', bin ?? '', runAs ?? ''], { cwd: ROOT, timeout: 60_000 }).catch(() => undefined);
  };
}

function installed(): boolean {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return false;
  return readdirSync(base).some((v) => existsSync(path.join(base, v, 'bin', 'initdb')));
}
