// Opens a SQLite store, writes, closes it, and says so: with nothing else keeping the process
// alive, closing must still finish (the checkpoint thread's last checkpoint included).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'hermes-close-child-'));
const store = await createSqliteStore({ file: path.join(dir, 'hermes.sqlite') });
// ~6 MB, past the WAL size that starts the checkpoint thread; the WAL is stat'ed once a second.
await Promise.all(Array.from({ length: 300 }, (_, i) => store.set(`k${i}`, 'x'.repeat(20_000))));
await new Promise((r) => setTimeout(r, 1_500));
await store.close();
rmSync(dir, { recursive: true, force: true });
process.stdout.write('closed\n');
