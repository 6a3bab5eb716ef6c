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
// writes one line per window to $PG_COUNT_DIR/<bot pid>.jsonl: {window, queries, at, url}, plus
// what bounds a level:
// - poolWaits / poolWaitMs: connections taken from the pool and the total time spent waiting for
//   them (pg.Pool connect → the connection handed over);
// - serverCpuMs: CPU (user + system) of the PostgreSQL server in the window, when it runs on this
//   machine (found by the URL's port on the postmaster's command line): the postmaster, its live
//   processes and the ones that ended (their time is in the postmaster's cutime/cstime). Every
//   instance of a setup reports the same server, so count it once per setup;
// - with PG_COUNT_ACTIVITY=1, `activity`: pg_stat_activity sampled every 20 ms on a connection of
//   its own (not counted), the backends of this database by state and wait event, summed over the
//   samples (so `{"active": 120, "idle:Client/ClientRead": 400}` over 100 samples = 1.2 busy).
// Sum the instances of one setup (same url) and divide by that level's replies.
import { createRequire } from 'node:module';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.PG_COUNT_DIR;
const entry = process.argv[1] ?? '';
if (dir && process.send && entry.includes('slack-bot-process') && process.env.HERMES_STORE_URL) {
  // The bot's own copy of pg (resolved from its bundle), so the patched prototype is the one it uses.
  const pg = createRequire(entry)('pg');
  const storeUrl = process.env.HERMES_STORE_URL;
  let count = 0;
  let waits = 0;
  let waitMs = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (...args) {
    count += 1;
    return query.apply(this, args);
  };
  const connect = pg.Pool.prototype.connect;
  pg.Pool.prototype.connect = function (cb) {
    const t0 = performance.now();
    const done = () => {
      waits += 1;
      waitMs += performance.now() - t0;
    };
    if (typeof cb === 'function') {
      return connect.call(this, (err, client, release) => {
        done();
        cb(err, client, release);
      });
    }
    return connect.call(this).then((client) => {
      done();
      return client;
    });
  };

  const port = (() => {
    try {
      return new URL(storeUrl).port || '5432';
    } catch {
      return undefined;
    }
  })();
  const ticks = 100; // USER_HZ on Linux
  const stat = (pid) => {
    try {
      const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      return { ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
    } catch {
      return undefined;
    }
  };
  let postmaster;
  const findPostmaster = () => {
    if (postmaster && stat(postmaster)) return postmaster;
    postmaster = undefined;
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        if (path.basename(cmd[0] ?? '') === 'postgres' && cmd.includes('-p') && cmd[cmd.indexOf('-p') + 1] === port) return (postmaster = pid);
      } catch {}
    }
    return undefined;
  };
  /** Server CPU ticks so far, or undefined when the server is not a local process. */
  const serverTicks = () => {
    const pm = port && findPostmaster();
    if (!pm) return undefined;
    const root = stat(pm);
    if (!root) return undefined;
    let total = root.own + root.reaped;
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      const s = stat(pid);
      if (s && String(s.ppid) === String(pm)) total += s.own;
    }
    return total;
  };

  let activity = {};
  let samples = 0;
  let sampler;
  if (process.env.PG_COUNT_ACTIVITY === '1') {
    const client = new pg.Client({ connectionString: storeUrl });
    let busy = false;
    client.connect().then(
      () => {
        sampler = setInterval(() => {
          if (busy) return;
          busy = true;
          query
            .call(client, "select state, wait_event_type, wait_event, left(query, 40) as q from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'")
            .then((r) => {
              samples += 1;
              for (const row of r.rows) {
                const key = `${row.state}${row.wait_event ? `:${row.wait_event_type}/${row.wait_event}` : ''}`;
                activity[key] = (activity[key] ?? 0) + 1;
                if (row.state === 'active' && row.wait_event_type === 'Lock') activity[`lock on: ${row.q}`] = (activity[`lock on: ${row.q}`] ?? 0) + 1;
              }
            })
            .catch(() => undefined)
            .finally(() => (busy = false));
        }, 20);
        sampler.unref();
      },
      () => undefined,
    );
  }

  let base = { count: 0, waits: 0, waitMs: 0, ticks: undefined };
  let window = 0;
  process.on('message', (m) => {
    if (m?.type === 'reset') {
      base = { count, waits, waitMs, ticks: serverTicks() };
      activity = {};
      samples = 0;
    } else if (m?.type === 'stats') {
      const t = serverTicks();
      const line = {
        window: ++window,
        queries: count - base.count,
        poolWaits: waits - base.waits,
        poolWaitMs: Math.round(waitMs - base.waitMs),
        serverCpuMs: t !== undefined && base.ticks !== undefined ? ((t - base.ticks) * 1000) / ticks : undefined,
        ...(samples > 0 ? { samples, activity } : {}),
        at: new Date().toISOString(),
        url: storeUrl.replace(/\/\/[^@]*@/, '//'),
      };
      appendFileSync(path.join(dir, `${process.pid}.jsonl`), `${JSON.stringify(line)}\n`);
    }
  });
}
