import { realpath } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where a path the model (or a user) names lands inside a workspace, or why it may not. Every file
 * tool goes through here, so "inside the workspace" has exactly one definition:
 * - the path is relative (an absolute path names the host, not the workspace);
 * - no `..` segment (even one that would come back inside: the model should not need it);
 * - once symlinks are followed, the file (or, for a new file, its nearest existing folder) is still
 *   inside the workspace's real path.
 * The check is repeated on the opened file descriptor (see `checkOpenedInside`), because code in the
 * sandbox can swap a file for a symlink between this check and the open.
 */

export type ResolvedPath =
  | { ok: true; /** Absolute host path. */ abs: string; /** Normalised workspace-relative path ('' = the root). */ rel: string }
  | { ok: false; reason: string };

const MAX_PATH_CHARS = 1_000;

/** Lexical checks only (no file system): what every resolution starts with. */
export function checkRelativePath(raw: string): { ok: true; rel: string } | { ok: false; reason: string } {
  const given = raw.trim();
  if (given.length > MAX_PATH_CHARS) return { ok: false, reason: `the path is longer than ${MAX_PATH_CHARS} characters` };
  if (given.includes('\0')) return { ok: false, reason: 'the path contains a NUL character' };
  if (path.isAbsolute(given) || /^[a-zA-Z]:[\\/]/.test(given) || given.startsWith('~')) {
    return { ok: false, reason: `"${given}" is an absolute path; paths are relative to the workspace (for example "data/report.csv")` };
  }
  const parts = given.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) return { ok: false, reason: `"${given}" contains "..", which would leave the workspace; use a path inside it` };
  return { ok: true, rel: parts.join('/') };
}

/** Resolves `raw` inside `root` (which must exist), following symlinks as the file system would. */
export async function resolveInside(root: string, raw: string): Promise<ResolvedPath> {
  const lexical = checkRelativePath(raw);
  if (!lexical.ok) return lexical;
  const realRoot = await realpath(root);
  const abs = path.join(realRoot, lexical.rel);
  // The deepest part of the path that exists decides where the rest would be created.
  let probe = abs;
  let suffix = '';
  for (;;) {
    try {
      const real = await realpath(probe);
      const landed = path.join(real, suffix);
      if (!isInside(realRoot, landed)) {
        return { ok: false, reason: `"${lexical.rel}" is (or goes through) a symbolic link that points outside the workspace` };
      }
      return { ok: true, abs: landed, rel: path.relative(realRoot, landed).split(path.sep).join('/') };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      if (probe === realRoot) return { ok: false, reason: 'the workspace folder is missing' };
      suffix = path.join(path.basename(probe), suffix);
      probe = path.dirname(probe);
    }
  }
}

export function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  // Only a ".." segment climbs out; a name that merely starts with two dots ("..foo") stays inside.
  const climbs = rel === '..' || rel.startsWith(`..${path.sep}`);
  return rel === '' || (!climbs && !path.isAbsolute(rel));
}

/** After open(): the descriptor's real target must still be inside (defeats swap-in-a-symlink races). */
export async function checkOpenedInside(root: string, fd: number): Promise<boolean> {
  try {
    const target = await realpath(`/proc/self/fd/${fd}`);
    return isInside(await realpath(root), target);
  } catch {
    // No /proc (not Linux): the pre-open check and O_NOFOLLOW are what we have.
    return true;
  }
}
