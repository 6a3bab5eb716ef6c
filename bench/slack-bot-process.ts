import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createReceiptJournal } from '../src/gateway/receipts.js';
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import { createCore } from '../src/app/app.js';
import { loadConfig } from '../src/settings/load-config.js';
import { deferOAuth, deferSocketModeClient } from '../adapters/slack/defer-socket-mode.js';
import { createBotHttp, listenHost } from '../src/app/bot-http.js';
import { builtinTools } from '../tools/index.js';
import { createSqliteStore } from '../src/state/store/sqlite-store.js';
import type { Store, UpdateOptions } from '../src/state/store/store.js';
import { createPostgresStore } from '../src/state/store/postgres-store.js';
import { isPostgresUrl } from '../src/state/store/open-store.js';
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * The bot under load, in its own process so the load generator and the fake servers do not share
 * its event loop or CPU: the real core and the Slack adapter in HTTP mode, wired as src/main.ts
 * wires them, configured from the environment. It reports event-loop delay and peak RSS over IPC.
 *
 * Messages from the parent: `reset` (start a measurement window), `stats`, `stop`.
 */
export interface BotStats {
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  peakRssMb: number;
  /** CPU (user + system) of the bot process in the window. */
  cpuMs: number;
  /** Store calls in the window and the summed time callers waited for them (queueing included). */
  storeOps: number;
  storeWaitMs: number;
  /** Inside the bot: from the request's arrival in the HTTP server to the end of its response (ms, each). */
  serverAckMs: number[];
  /** From the load generator's send (its SENT_HEADER) to the request's arrival in the HTTP server (ms, each). */
  beforeServerMs: number[];
  /**
   * Each event request carrying ID_HEADER, in wall-clock ms (performance.timeOrigin + now): arrival
   * in the HTTP server (headers parsed), receipt write started and committed (0 when the request
   * was not journaled: the message.channels twin of a mention), response finished.
   */
  requests: Array<[id: string, arrived: number, receiptStart: number, receiptEnd: number, finished: number]>;
  /**
   * The process's CPU clock against the wall clock, read at each event request's arrival and end:
   * [wall ms, CPU ms since the window began]. The load generator reads from it how much CPU the bot
   * spent between a request reaching it and its answer, a figure a busy shared machine does not
   * stretch the way it stretches wall time.
   */
  cpuClock: Array<[wall: number, cpuMs: number]>;
}

/** The load generator's id of a request (its event_id), so both sides' times of it can be joined. */
export const ID_HEADER = 'x-bench-id';

/** Wall-clock ms (performance.timeOrigin + now) at which the load generator sent a request. */
export const SENT_HEADER = 'x-bench-sent-at';
export type BotMessage = { type: 'ready'; port: number } | { type: 'stats'; stats: BotStats } | { type: 'reset-ok' } | { type: 'error'; message: string };

const send = (m: BotMessage) => process.send?.(m);

async function main(): Promise<void> {
  const result = loadConfig(process.env);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  const log = pino({ level: 'silent' });
  // HERMES_STORE_URL=postgres://… runs this bot as one of several instances on that database.
  const shared = isPostgresUrl(config.storeUrl) ? await createPostgresStore({ url: config.storeUrl, log }) : undefined;
  const counted = countingStore(shared ?? (await createSqliteStore({ file: path.join(config.dataDir, 'hermes.sqlite'), log })));
  const core = await createCore({ config, log, tools: builtinTools(), reminders: false, store: counted.store, shared });
  let ready = false;
  // The bot's one HTTP server, on every interface as main.ts runs it in Slack HTTP mode.
  const http = createBotHttp({ log, isReady: () => ready });
  // As src/main.ts starts Slack in HTTP mode: Bolt's Socket Mode client and OAuth installer load only if asked for.
  deferSocketModeClient();
  deferOAuth();
  const { createSlackAdapter } = await import('../adapters/slack/slack-adapter.js');
  // The receipt write (the one store write an acknowledgement waits for), timed per event_id.
  const receiptTimes = new Map<string, [number, number]>();
  const journal = createReceiptJournal(core.database, 'slack');
  const wallNow = () => performance.timeOrigin + performance.now();
  const receipts = {
    ...journal,
    async add(id: string, body: unknown) {
      const t0 = wallNow();
      const r = await journal.add(id, body);
      const eventId = (body as { event_id?: unknown } | null)?.event_id;
      if (typeof eventId === 'string') receiptTimes.set(eventId, [t0, wallNow()]);
      return r;
    },
  };
  const adapter = await createSlackAdapter({ config: config.slack!, http, gateway: core.gateway, database: core.database, receipts, log });
  const port = await http.start(0, listenHost({ slackHttp: true }));
  await adapter.start();
  await core.start();
  ready = true;

  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  // Where an acknowledgement's time goes: in this process, or before the request reached it.
  let serverAcks: number[] = [];
  let beforeServer: number[] = [];
  let requests: BotStats['requests'] = [];
  let cpuClock: BotStats['cpuClock'] = [];
  let cpuClock0 = process.cpuUsage();
  // At most one reading per 5 ms (a getrusage call each, 15-20 µs on this VM: it sums every
  // thread's clock): in a profile, one per request was 4-7 % of the bot's samples, and one per
  // 2 ms still 2 % at 500 sessions (both ends of every request). Readings are interpolated between
  // (throughput.ts, cpuAt), so a CPU time between two instants is off by at most the CPU of 5 ms.
  let lastCpuRead = 0;
  const readCpuClock = (now: number) => {
    if (now - lastCpuRead < 5) return;
    lastCpuRead = now;
    const c = process.cpuUsage(cpuClock0);
    cpuClock.push([performance.timeOrigin + now, (c.user + c.system) / 1000]);
  };
  const arrived = new WeakMap<IncomingMessage, number>();
  diagnostics.subscribe('http.server.request.start', (m) => {
    const { request } = m as { request: IncomingMessage };
    const now = performance.now();
    arrived.set(request, now);
    if (request.url?.startsWith('/slack/events')) readCpuClock(now);
    const sent = Number(request.headers[SENT_HEADER]);
    if (sent > 0) beforeServer.push(performance.timeOrigin + now - sent);
  });
  diagnostics.subscribe('http.server.response.finish', (m) => {
    const { request } = m as { request: IncomingMessage; response: ServerResponse };
    const t0 = arrived.get(request);
    if (t0 === undefined || !request.url?.startsWith('/slack/events')) return;
    const now = performance.now();
    serverAcks.push(now - t0);
    readCpuClock(now);
    const id = request.headers[ID_HEADER];
    if (typeof id !== 'string') return;
    const r = receiptTimes.get(id);
    receiptTimes.delete(id);
    requests.push([id, performance.timeOrigin + t0, r?.[0] ?? 0, r?.[1] ?? 0, performance.timeOrigin + now]);
  });
  let peakRss = process.memoryUsage.rss();
  let cpu0 = process.cpuUsage();
  // The window's peak RSS: on Linux the kernel's own high-water mark (VmHWM), set back to the
  // current RSS at each reset (`5` into /proc/self/clear_refs) and read once at the window's end.
  // It is the true peak, which the 50 ms sampler below can only approach from under, and it costs
  // nothing while the window runs: the sampler opened and read /proc/self/stat 20 times a second
  // (about 50 µs each on this VM, 1 % of the bot's profile at 500 sessions). The sampler stays
  // where the mark cannot be reset, and with BENCH_BOT_MEMORY=1 (where the peak RSS was: V8 heap,
  // external, printed to stderr at exit).
  const resetHighWaterMark = (): boolean => {
    try {
      writeFileSync('/proc/self/clear_refs', '5');
      return highWaterMark() !== undefined;
    } catch {
      return false;
    }
  };
  const kernelPeak = !process.env.BENCH_BOT_MEMORY && resetHighWaterMark();
  let atPeak: NodeJS.MemoryUsage | undefined;
  if (!kernelPeak) {
    const sampler = setInterval(() => {
      const rss = process.memoryUsage.rss();
      if (process.env.BENCH_BOT_MEMORY && rss > peakRss) atPeak = process.memoryUsage();
      peakRss = Math.max(peakRss, rss);
    }, 50);
    sampler.unref();
  }
  process.on('exit', () => {
    if (atPeak) process.stderr.write(`bot memory at the peak RSS (MB): ${Object.entries(atPeak).map(([k, v]) => `${k} ${(v / 2 ** 20).toFixed(1)}`).join(', ')}\n`);
  });

  // Store calls are key-value calls plus statements on the operational tables (each statement of a
  // transaction counts, and so do its BEGIN and COMMIT: Kysely runs them as statements too).
  let tables0 = { ...core.database.stats };
  const cpuAndStore = () => {
    const c = process.cpuUsage(cpu0);
    const t = core.database.stats;
    return { cpuMs: (c.user + c.system) / 1000, storeOps: counted.ops + (t.queries - tables0.queries), storeWaitMs: counted.waitMs + (t.waitMs - tables0.waitMs) };
  };
  // BENCH_BOT_CPU_PROF=<dir>: a V8 CPU profile of each measurement window (reset → stats), so start-up
  // and warm-up do not crowd out what runs under load.
  const profileDir = process.env.BENCH_BOT_CPU_PROF;
  const profiler = profileDir ? new Session() : undefined;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
  }
  let windows = 0;
  process.on('message', async (m: { type: string }) => {
    if (m.type === 'reset') {
      if (profiler) await profiler.post('Profiler.start');
      lag.reset();
      serverAcks = [];
      beforeServer = [];
      requests = [];
      cpuClock = [];
      cpuClock0 = process.cpuUsage();
      receiptTimes.clear();
      if (kernelPeak) resetHighWaterMark();
      peakRss = process.memoryUsage.rss();
      cpu0 = process.cpuUsage();
      counted.reset();
      tables0 = { ...core.database.stats };
      send({ type: 'reset-ok' });
    } else if (m.type === 'stats') {
      if (profiler) {
        const { profile } = await profiler.post('Profiler.stop');
        writeFileSync(path.join(profileDir!, `bot-window-${++windows}-${process.pid}.cpuprofile`), JSON.stringify(profile));
      }
      peakRss = Math.max(peakRss, process.memoryUsage.rss(), (kernelPeak && highWaterMark()) || 0);
      send({ type: 'stats', stats: { lagP50Ms: lag.percentile(50) / 1e6, lagP99Ms: lag.percentile(99) / 1e6, lagMaxMs: lag.max / 1e6, peakRssMb: peakRss / 2 ** 20, serverAckMs: serverAcks, beforeServerMs: beforeServer, requests, cpuClock, ...cpuAndStore() } });
    } else if (m.type === 'stop') {
      void (async () => {
        await adapter.stop();
        await http.stop();
        await core.close();
        await counted.store.close();
        process.exit(0);
      })();
    }
  });
  // The parent going away must not leave a bot behind.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', port });
}

/** The kernel's peak RSS of this process since it was last reset (VmHWM, bytes); undefined where there is none. */
function highWaterMark(): number | undefined {
  try {
    const kb = /^VmHWM:\s*(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** The same store, with every call counted and timed from the caller's side. */
function countingStore(inner: Store) {
  const counters = { ops: 0, waitMs: 0 };
  const timed = async <R>(fn: () => Promise<R>): Promise<R> => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      counters.ops += 1;
      counters.waitMs += performance.now() - t0;
    }
  };
  const store: Store = {
    get: <T>(key: string) => timed(() => inner.get<T>(key)),
    set: (key, value, ttl) => timed(() => inner.set(key, value, ttl)),
    delete: (key) => timed(() => inner.delete(key)),
    update: <T>(key: string, fn: (current: T | undefined) => T | undefined, opts?: UpdateOptions) => timed(() => inner.update<T>(key, fn, opts)),
    increment: (key, by, ttl) => timed(() => inner.increment(key, by, ttl)),
    keysWithPrefix: (prefix) => timed(() => inner.keysWithPrefix(prefix)),
    close: () => inner.close(),
  };
  return {
    store,
    get ops() {
      return counters.ops;
    },
    get waitMs() {
      return counters.waitMs;
    },
    reset() {
      counters.ops = 0;
      counters.waitMs = 0;
    },
  };
}

main().catch((err: Error) => {
  send({ type: 'error', message: err.message });
  process.exit(1);
});
