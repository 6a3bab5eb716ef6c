// Counts the statements the bench's bot process sends to PostgreSQL, at the driver: every
// `pg` Client.prototype.query (pool.query goes through it; so do Kysely's statements, BEGIN and
// COMMIT, the key-value store's, leases and LISTEN), per measurement window (the bench's
// reset → stats messages). It needs no change to the code it measures, so the same file counts an
// older checkout's round trips the same way (round 2's work queue and leases sent statements its
// store-call counter did not see). Used as a preload, on PostgreSQL setups only:
//
//   PG_COUNT_DIR=/tmp/pg-counts NODE_OPTIONS="--import $PWD/bench/pg-statement-count.mjs" \
//     npm run bench -- --only=instances --no-peers
//
// writes one line per window to $PG_COUNT_DIR/<bot pid>.jsonl: {window, queries, at, url}. Sum the
// instances of one setup (same url) and divide by that level's replies.
import { createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.PG_COUNT_DIR;
const entry = process.argv[1] ?? '';
if (dir && process.send && entry.includes('slack-bot-process') && process.env.HERMES_STORE_URL) {
  // The bot's own copy of pg (resolved from its bundle), so the patched prototype is the one it uses.
  const pg = createRequire(entry)('pg');
  let count = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (...args) {
    count += 1;
    return query.apply(this, args);
  };
  let base = 0;
  let window = 0;
  process.on('message', (m) => {
    if (m?.type === 'reset') base = count;
    else if (m?.type === 'stats') {
      const line = { window: ++window, queries: count - base, at: new Date().toISOString(), url: process.env.HERMES_STORE_URL.replace(/\/\/[^@]*@/, '//') };
      appendFileSync(path.join(dir, `${process.pid}.jsonl`), `${JSON.stringify(line)}\n`);
    }
  });
}
