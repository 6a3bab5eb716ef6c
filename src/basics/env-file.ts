import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'dotenv';

/**
 * The `.env` file in the folder the bot starts in. The environment wins over the file, and an
 * empty value counts as unset on both sides (as in config-env.ts presentValues): `HERMES_DATA_DIR=` from a
 * Docker env file must not hide a value, and an empty line in `.env` must not blank a default.
 *
 * Parsed by dotenv, not Node 20's `util.parseEnv`: that one reads a line without `=` as the start
 * of a name running on to the next `=`, so `OPENAI_API_KEY` alone on a line swallowed the
 * `HERMES_MODEL=…` under it. dotenv skips such a line; we name it so the person can fix it.
 */

type Env = Record<string, string | undefined>;

export type EnvFileResult =
  | { kind: 'none' }
  | { kind: 'loaded'; file: string; applied: string[]; ignoredLines: number[] }
  | { kind: 'error'; message: string };

/** What the file adds to `env`: its non-empty values for variables `env` leaves unset or empty. Pure. */
export function envFileValues(env: Env, text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parse(text))) {
    if (value.trim() === '') continue;
    if ((env[name] ?? '').trim() !== '') continue;
    out[name] = value;
  }
  return out;
}

const ASSIGNMENT = /^\s*(export\s+)?[\w.-]+\s*[=:]/;

/**
 * 1-based numbers of lines that set nothing although they are not blank or comments (most often a
 * name without `=`). A line inside a quoted multi-line value is part of that value, not ignored.
 */
export function ignoredEnvLines(text: string): number[] {
  const values = Object.values(parse(text)).filter((v) => v.includes('\n'));
  const out: number[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#') || ASSIGNMENT.test(line)) return;
    const bare = t.replace(/["'`]$/, '').trim();
    if (values.some((v) => v.split('\n').some((l) => l.trim() === bare))) return;
    out.push(i + 1);
  });
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
  return { kind: 'loaded', file, applied: Object.keys(values), ignoredLines: ignoredEnvLines(text) };
}

/** The warning for lines that set nothing, or undefined. */
export function ignoredLinesWarning(result: EnvFileResult): string | undefined {
  if (result.kind !== 'loaded' || result.ignoredLines.length === 0) return undefined;
  const n = result.ignoredLines;
  return `${result.file}: line${n.length > 1 ? 's' : ''} ${n.join(', ')} set${n.length > 1 ? '' : 's'} nothing (no "="): write NAME=value, or start the line with # to keep it as a comment.`;
}
