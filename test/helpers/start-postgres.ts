import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A throw-away PostgreSQL cluster started with the script CI uses (.ci/postgres.sh: a temp dir,
 * a non-root user, a free port on 127.0.0.1). For the test suite's global setup and the bench.
 * Undefined when PostgreSQL is not installed or could not start (the reason is returned).
 */
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ThrowawayPostgres {
  url: string;
  stop(): Promise<void>;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres | { error: string }> {
  if (!installed()) return { error: 'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)' };
  const script = 'source .ci/postgres.sh && start_postgres >/dev/null && printf "%s\\n%s\\n%s\\n%s\\n" "$HERMES_TEST_PG_URL" "$PG_DIR" "$PG_BIN" "$PG_RUN_AS"';
  let out: string;
  try {
    ({ stdout: out } = await run('bash', ['-c', script], { cwd: ROOT, timeout: 120_000 }));
  } catch (err) {
    return { error: `could not start PostgreSQL: ${(err as Error).message}` };
  }
  const [url, dir, bin, runAs] = out.split('\n');
  return {
    url: url ?? '',
    async stop() {
      const stop = 'source .ci/postgres.sh && PG_DIR="$1" PG_BIN="$2" PG_RUN_AS="$3" stop_postgres';
      await run('bash', ['-c', stop, 'stop', dir ?? '', bin ?? '', runAs ?? ''], { cwd: ROOT, timeout: 60_000 }).catch(() => undefined);
    },
  };
}

function installed(): boolean {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return false;
  return readdirSync(base).some((v) => existsSync(path.join(base, v, 'bin', 'initdb')));
}
