import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StartupRefusal } from '../../basics/startup-refusal.js';

/**
 * One instance per SQLite file. Two processes on one file would each trust their read cache and
 * their in-process serialisation, and quietly overwrite each other's state.
 *
 * The lock is SQLite's own exclusive lock on a small side database (`<store>.lock`), held by an
 * open connection for the life of the process: an OS-level file lock, which the kernel drops
 * the moment the process dies, however it dies. So a restart after a crash or `kill -9` is never
 * blocked by anything the dead process left behind (the file stays; the lock does not), and no
 * pid file can be mistaken for a live owner after pid reuse. A second connection in the same
 * process is refused too (SQLite tracks these locks per process), which lets tests run in-process.
 */
export interface SqliteOwnerLock {
  file: string;
  release(): Promise<void>;
}

export function ownerLockFile(storeFile: string): string {
  return `${storeFile}.lock`;
}

export async function acquireSqliteOwnerLock(storeFile: string): Promise<SqliteOwnerLock> {
  const file = ownerLockFile(path.resolve(storeFile));
  await mkdir(path.dirname(file), { recursive: true });
  let db: Database.Database;
  try {
    // No busy wait: a held lock means a live owner right now, not a moment's contention.
    db = new Database(file, { timeout: 0 });
  } catch (err) {
    throw new Error(`cannot open the store lock ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      throw new StartupRefusal(
        `another hermes instance is already running on the SQLite store ${storeFile}. SQLite serves one instance; ` +
          'stop the other one, or give each instance its own HERMES_DATA_DIR, or run several instances on PostgreSQL ' +
          '(HERMES_STORE_URL=postgres://…, see docs/scaling.md).',
      );
    }
    throw new Error(`cannot take the store lock ${file}: ${(err as Error).message}`, { cause: err });
  }
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      try {
        db.exec('ROLLBACK');
      } catch {
        // Nothing to roll back: closing the connection drops the lock all the same.
      }
      db.close();
    },
  };
}
