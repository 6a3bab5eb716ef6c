import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import Keyv from 'keyv';
import type { Logger } from '../../basics/log.js';
import type { Store } from './store.js';
import { createKeyvStore } from './keyv-store.js';
import { SqliteKeyvAdapter } from './sqlite-adapter.js';
import { startCheckpointer } from './sqlite-checkpointer.js';
import { commitOpenWrites } from './sqlite-group-commit.js';

export interface SqliteStoreOptions {
  /** Path of the SQLite file; its directory is created if missing. */
  file: string;
  log?: Logger;
  /** How long a write waits for another connection's lock before failing (SQLITE_BUSY). */
  busyTimeoutMs?: number;
  /** How often rows past their TTL are deleted (also once at open). */
  sweepIntervalMs?: number;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
const DEFAULT_SWEEP_INTERVAL_MS = 60 * 60 * 1000;
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
/** SQLite's own default, for when the checkpoint thread cannot run. */
const AUTOCHECKPOINT_PAGES = 1000;
// The adapter keeps rows past their TTL until someone reads them (it has no TTL support of its
// own), so keys written once and never read again (inbound dedupe ids) would pile up forever.
const SWEEP_EXPIRED_SQL =
  "DELETE FROM keyv WHERE (CASE WHEN json_valid(value) THEN json_extract(value, '$.expires') END) < ?";

/**
 * Opens the SQLite-backed store. WAL lets readers (a backup, `sqlite3` in a shell, the trace CLI)
 * work while the bot writes; the busy timeout makes a briefly locked file wait instead of failing.
 * Throws if the file cannot be opened, so a bad HERMES_DATA_DIR stops startup with a clear line.
 */
export async function createSqliteStore(opts: SqliteStoreOptions): Promise<Store> {
  const file = path.resolve(opts.file);
  await mkdir(path.dirname(file), { recursive: true });

  let adapter: SqliteKeyvAdapter;
  try {
    adapter = new SqliteKeyvAdapter(file, { busyTimeoutMs: opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS });
    const mode = adapter.db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') opts.log?.warn({ file, mode }, 'store: SQLite did not switch to WAL journal mode');
    // WAL with synchronous=NORMAL: a commit is durable once it is in the WAL file, so a killed
    // process (kill -9, OOM, crash) loses nothing; only an OS crash or power cut can lose the last
    // commits. FULL would fsync every write and cap the bot at a few hundred writes per second.
    adapter.db.pragma('synchronous = NORMAL');
    // Checkpoints run on a thread of their own (sqlite-checkpointer.ts), never on this one; the WAL
    // file is cut back to this size once it has been copied over.
    adapter.db.pragma('wal_autocheckpoint = 0');
    adapter.db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    // Statement journals and sorts in memory, not in temporary files (database.ts says why).
    adapter.db.pragma('temp_store = MEMORY');
  } catch (error) {
    throw new Error(`cannot open the store at ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const sweepStatement = adapter.db.prepare(SWEEP_EXPIRED_SQL);

  const sweep = async (): Promise<void> => {
    try {
      commitOpenWrites();
      sweepStatement.run(Date.now());
    } catch (error) {
      opts.log?.warn({ err: error instanceof Error ? error.message : String(error) }, 'store: sweeping expired rows failed');
    }
  };
  await sweep();
  const timer = setInterval(() => void sweep(), opts.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
  timer.unref();

  // No Keyv namespace prefix: Keyv skips adding it when a key already starts with it, so
  // storeKey('hermes', 'x') and 'x' would share a row. Our keys are unique as they are.
  const checkpointer = startCheckpointer(file, {
    log: opts.log,
    fallback: () => {
      if (adapter.db.open) adapter.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    },
  });

  const keyv = new Keyv({ store: adapter, useKeyPrefix: false, throwOnErrors: true });
  const store = createKeyvStore(keyv, opts.log, (prefix) => adapter.keysWithPrefix(prefix));
  return {
    ...store,
    close: async () => {
      clearInterval(timer);
      await checkpointer.stop();
      await store.close();
    },
  };
}
