import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';

/**
 * The `.env` file in the folder the bot starts in. The environment wins over the file, and an
 * empty value counts as unset on both sides (as in config.ts): `HERMES_DATA_DIR=` from a
 * Docker env file must not hide a value, and an empty line in `.env` must not blank a default.
 */

type Env = Record<string, string | undefined>;

export type EnvFileResult =
  | { kind: 'none' }
  | { kind: 'loaded'; file: string; applied: string[] }
  | { kind: 'error'; message: string };

/** What the file adds to `env`: its non-empty values for variables `env` leaves unset or empty. Pure. */
export function envFileValues(env: Env, text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (value === undefined || value.trim() === '') continue;
    if ((env[name] ?? '').trim() !== '') continue;
    out[name] = value;
  }
  return out;
}

/** Reads `<cwd>/.env` (if there is one) into `env` in place. A file that exists but cannot be read is an error. */
export function applyEnvFile(env: Env, cwd: string): EnvFileResult {
  const file = path.join(cwd, '.env');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'none' };
    return { kind: 'error', message: `${file} could not be read (${code ?? (err as Error).message}): fix its permissions, or remove it and set the variables in the environment.` };
  }
  const values = envFileValues(env, text);
  Object.assign(env, values);
  return { kind: 'loaded', file, applied: Object.keys(values) };
}
