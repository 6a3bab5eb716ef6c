import { access, constants, mkdir } from 'node:fs/promises';

/**
 * The data folder must exist and be writable before anything opens the store or a trace file;
 * otherwise the first write fails with a raw EEXIST / EACCES / SQLITE_CANTOPEN that names no
 * setting. The error line names HERMES_DATA_DIR and the path; main exits 2, as for a bad setting.
 */
export async function prepareDataDir(dir: string): Promise<string | undefined> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
    return undefined;
  } catch (err) {
    return dataDirError(dir, err);
  }
}

/** One line for an error met while creating or opening something in the data folder. */
export function dataDirError(dir: string, err: unknown): string {
  const code = errorCode(err);
  const why =
    code === 'EEXIST' || code === 'ENOTDIR' ? 'a file is in the way of the folder'
    : code === 'EACCES' || code === 'EPERM' ? 'no permission to write there'
    : code === 'EROFS' ? 'the file system is read-only'
    : code === 'ENOSPC' ? 'the disk is full'
    : code === 'SQLITE_CANTOPEN' ? 'the store file cannot be opened there'
    : (err as Error)?.message ?? String(err);
  return `HERMES_DATA_DIR=${dir} cannot be used (${why}${code && !why.includes(code) ? `, ${code}` : ''}): point HERMES_DATA_DIR at a folder this user can write, or fix that folder's permissions.`;
}

/** True for errors that come from the data folder or store file rather than from a bug. */
export function isDataDirError(err: unknown): boolean {
  const code = errorCode(err);
  return ['EEXIST', 'ENOTDIR', 'EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EISDIR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_NOTADB', 'SQLITE_CORRUPT'].includes(code);
}

/** The errno or SQLite code of an error or of the error it wraps (sqlite-store adds context). */
function errorCode(err: unknown): string {
  for (let e = err as (Error & { code?: unknown }) | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') return e.code;
  }
  return '';
}
