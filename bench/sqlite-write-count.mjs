// Where the bench's bot process spends its CPU and its writes on SQLite, per measurement window
// (the bench's reset → stats messages), with no change to the code it measures, so an older
// checkout is measured the same way. Used as a preload on SQLite setups:
//
//   SQLITE_COUNT_DIR=/tmp/sqlite-counts NODE_OPTIONS="--import $PWD/bench/sqlite-write-count.mjs" \
//     npm run bench -- --quick --only=throughput --no-peers
//
// writes one line per window to $SQLITE_COUNT_DIR/<bot pid>.jsonl:
// - statements run by better-sqlite3 (every connection: the tables' and the key-value store's),
//   writes that committed on their own (autocommit: outside BEGIN … COMMIT), transactions committed;
//   commits = the two added (what each costs: WAL frames, the write lock); the wall time spent
//   inside SQLite calls on the main thread (all of them; COMMITs alone; autocommit writes alone;
//   by statement text, the 25 costliest); outgoing HTTP requests by method and path;
// - per thread (its name in /proc/self/task/<tid>/comm and its id): user and system CPU ms, bytes written
//   and write calls (/proc/self/task/<tid>/io: the WAL's pages are written by the thread that
//   commits, the database file's by the checkpointer), and the process's totals.
import { createRequire } from 'node:module';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.SQLITE_COUNT_DIR;
const entry = process.argv[1] ?? '';
if (dir && process.send && entry.includes('slack-bot-process') && !process.env.HERMES_STORE_URL) {
  const Database = createRequire(entry)('better-sqlite3');
  const probe = new Database(':memory:');
  const Statement = Object.getPrototypeOf(probe.prepare('select 1'));
  probe.close();
  const c = { statements: 0, autocommitWrites: 0, transactions: 0, rollbacks: 0, sqliteMs: 0, commitMs: 0, autocommitMs: 0 };
  // Per statement text (its first 70 characters): calls and wall time inside SQLite.
  let bySql = {};
  const clock = () => Number(process.hrtime.bigint()) / 1e6;
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = Statement[method];
    Statement[method] = function (...args) {
      c.statements += 1;
      const sql = this.source.trimStart().slice(0, 8).toLowerCase();
      const kind = sql.startsWith('commit') || sql.startsWith('end') ? 'commit' : sql.startsWith('rollback') ? 'rollback' : !this.database.inTransaction && /^(insert|update|delete|replace)/.test(sql) ? 'autocommit' : 'other';
      if (kind === 'commit') c.transactions += 1;
      else if (kind === 'rollback') c.rollbacks += 1;
      else if (kind === 'autocommit') c.autocommitWrites += 1;
      // Wall time inside SQLite (synchronous on this thread): its CPU, plus any time the thread was preempted.
      const t0 = clock();
      try {
        return original.apply(this, args);
      } finally {
        const ms = clock() - t0;
        c.sqliteMs += ms;
        const key = this.source.replace(/\s+/g, ' ').trim().slice(0, 70);
        const b = (bySql[key] ??= { n: 0, ms: 0 });
        b.n += 1;
        b.ms += ms;
        if (kind === 'commit') c.commitMs += ms;
        else if (kind === 'autocommit') c.autocommitMs += ms;
      }
    };
  }
  const exec = Database.prototype.exec;
  Database.prototype.exec = function (...args) {
    const t0 = clock();
    try {
      return exec.apply(this, args);
    } finally {
      c.sqliteMs += clock() - t0;
    }
  };
  // Outgoing HTTP requests by method and path (the bot's calls to Slack and to the model): socket
  // writes were a large share of the profile, so count what is written.
  let http = {};
  const diagnostics = createRequire(entry)('node:diagnostics_channel');
  const note = (key) => (http[key] = (http[key] ?? 0) + 1);
  diagnostics.subscribe('undici:request:create', (m) => note(`undici ${m.request.method} ${String(m.request.path).split('?')[0]}`));
  diagnostics.subscribe('http.client.request.start', (m) => note(`http ${m.request.method} ${String(m.request.path).split('?')[0]}`));
  const tick = 1000 / 100; // USER_HZ
  const threads = () => {
    const out = {};
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
        const io = Object.fromEntries(readFileSync(`/proc/self/task/${tid}/io`, 'utf8').trim().split('\n').map((l) => l.split(': ')).map(([k, v]) => [k, Number(v)]));
        out[tid] = { name, userMs: Number(f[11]) * tick, sysMs: Number(f[12]) * tick, wchar: io.wchar, syscw: io.syscw, rchar: io.rchar };
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return out;
  };
  let base = { c: { ...c }, t: threads(), cpu: process.cpuUsage() };
  let window = 0;
  process.on('message', (m) => {
    if (m?.type === 'reset') {
      base = { c: { ...c }, t: threads(), cpu: process.cpuUsage() };
      bySql = {};
      http = {};
    }
    else if (m?.type === 'stats') {
      const now = threads();
      const byName = {};
      for (const [tid, t] of Object.entries(now)) {
        const b = base.t[tid] ?? { userMs: 0, sysMs: 0, wchar: 0, syscw: 0, rchar: 0 };
        const name = tid === String(process.pid) ? 'main' : `${t.name}:${tid}`;
        const s = (byName[name] ??= { threads: 0, userMs: 0, sysMs: 0, wchar: 0, syscw: 0, rchar: 0 });
        s.threads += 1;
        for (const k of ['userMs', 'sysMs', 'wchar', 'syscw', 'rchar']) s[k] += t[k] - b[k];
      }
      const cpu = process.cpuUsage(base.cpu);
      const counts = Object.fromEntries(Object.keys(c).map((k) => [k, c[k] - base.c[k]]));
      const statements = Object.fromEntries(Object.entries(bySql).sort((a, b) => b[1].ms - a[1].ms).slice(0, 25));
      const line = { window: ++window, at: new Date().toISOString(), ...counts, statementsBySql: statements, http, commits: counts.autocommitWrites + counts.transactions, userMs: cpu.user / 1000, sysMs: cpu.system / 1000, threads: byName };
      appendFileSync(path.join(dir, `${process.pid}.jsonl`), `${JSON.stringify(line)}\n`);
    }
  });
}
