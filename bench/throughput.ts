import { fork, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import diagnostics from 'node:diagnostics_channel';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { startFakeSlack, type ApiCall, type FakeSlack } from '../test/fakes/slack/fake-slack.js';
import type { BotMessage, BotStats } from './slack-bot-process.js';
import { compileBenchEntry, startNodeOptions } from './compile.js';
import { percentile, round, withDeadline } from './stats.js';

/**
 * Section 2: the Slack adapter in HTTP mode under N concurrent sessions (one channel each). Every
 * session posts a mention (app_mention + message event, as Slack delivers them), waits until the
 * fake Slack sees the bot's chat.postMessage in that channel, and posts the next one: a closed
 * loop, so at best each session completes one reply per model latency. The bot runs in its own
 * process (slack-bot-process.ts); fakes and load generator run here.
 */
export interface ThroughputSizes { sessions: number[]; rounds: (sessions: number) => number; modelLatencyMs: number }

export interface ThroughputRow {
  sessions: number;
  replies: number;
  seconds: number;
  repliesPerSecond: number;
  physicalLimit: number;
  percentOfLimit: number;
  replyAboveModelP50Ms: number;
  replyAboveModelP99Ms: number;
  ackP50Ms: number;
  ackP99Ms: number;
  /** The same acknowledgements timed inside the bot (arrival in its HTTP server → response sent). */
  serverAckP99Ms: number;
  /** From the generator's send to the bot's HTTP server having the request's headers (p50 / p99). */
  beforeServerP50Ms: number;
  beforeServerP99Ms: number;
  /** Ack p99 of the rounds after the first (the first is every session at once, a burst of 2 × sessions requests). */
  ackAfterFirstRoundP99Ms?: number;
  eventLoopLagP99Ms: number;
  peakRssMb: number;
  failures: number;
  /** Deliveries answered with something other than 200 (delivered again, as Slack does); the first few in notAckedSample. */
  notAcked?: number;
  notAckedSample?: string[];
  /** Threads with more than one bot post (a question answered twice); each is also listed in errors. */
  threadsAnsweredTwice?: number;
  /** Bot process CPU per reply, and its share of one core over the level. */
  botCpuMsPerReply: number;
  botCpuPercent: number;
  storeOpsPerReply: number;
  /** Mean time a store call took from the caller's side (SQLite queueing included). */
  storeWaitMsPerOp: number;
  /** Event-loop lag p99 of this process (fakes + load generator): if high, ack times include it. */
  generatorLagP99Ms: number;
  /** CPU of this process (fakes + load generator) over the level, % of one core: near 100, ack times include its queueing. */
  generatorCpuPercent: number;
  /** Where each acknowledgement's time went, phase by phase (ackPhases below), for the first round, the later ones and all. */
  ackPhases?: Record<'firstRound' | 'laterRounds' | 'all', AckPhases>;
  /** What the opening burst (the first measured round, every session at once) cost both processes (burstCost below). */
  burst?: BurstCost;
}

/**
 * The opening burst as a whole: from the first of its requests written to the last answered, how
 * much CPU the bot spent (all of it, acks and whatever else ran: on one thread the last request
 * cannot be answered sooner than that), and how much the generator spent from its first call to
 * its last answer read (its fetch machinery and the fakes share its loop and the machine's 2 cores).
 */
export interface BurstCost {
  requests: number;
  /** First written → last served, bot's wall clock with the offset taken out. */
  wallMs: number;
  botCpuMs: number;
  botCpuMsPerAck: number;
  generatorCpuMs: number;
  generatorCpuMsPerRequest: number;
}

function burstCost(sent: Map<string, SentRequest>, bot: BotStats['requests'], clock: BotStats['cpuClock'], generatorCpuMs: number): BurstCost | undefined {
  const offset = clockOffset(sent, bot);
  let firstWritten = Infinity;
  let lastFinished = -Infinity;
  let requests = 0;
  for (const [id, , , , finished] of bot) {
    const g = sent.get(id);
    if (!g || g.round !== 0 || g.written === undefined) continue;
    requests += 1;
    firstWritten = Math.min(firstWritten, g.written + offset);
    lastFinished = Math.max(lastFinished, finished);
  }
  if (requests === 0) return undefined;
  const botCpuMs = cpuAt(clock, lastFinished) - cpuAt(clock, firstWritten);
  return {
    requests,
    wallMs: round(lastFinished - firstWritten, 1),
    botCpuMs: round(botCpuMs, 1),
    botCpuMsPerAck: round(botCpuMs / requests, 3),
    generatorCpuMs: round(generatorCpuMs, 1),
    generatorCpuMsPerRequest: round(generatorCpuMs / requests, 3),
  };
}

/**
 * One acknowledgement, cut at the points both processes timestamp (wall clock, ms):
 * - `queued`: the generator's own send-side delay, from calling fetch to undici writing the
 *   request's headers to the socket (the generator's loop and connection set-up);
 * - `toBot`: written → the bot's HTTP server has the headers (kernel, and the bot's loop reading);
 * - `toReceipt`: arrival → the receipt write starts (body, signature, parse, Bolt); journaled requests only;
 * - `receipt`: the receipt write, committed;
 * - `toAck`: committed (or arrival, for a request not journaled) → the response finished;
 * - `inBot`: arrival → response finished;
 * - `back`: finished → the generator's undici has the response headers (kernel, and the generator's loop);
 * - `wire`: written → response headers in the generator: the acknowledgement without the
 *   generator's send-side queueing;
 * - `served`: written → the bot's response finished: what a sender that is not itself late (Slack)
 *   would wait, without the generator's send-side queueing or its loop reading the answer;
 * - `generator`: calling fetch → its promise resolved: the figure reported as the ack;
 * - `botCpu`: the bot's CPU time (ms, all its threads) from written to served, read off its CPU
 *   clock (BotStats.cpuClock): what the ack cost in the bot's work done first, which a loaded
 *   machine does not stretch (on a quiet machine with the bot busy, `served` tends to it).
 * Each as p50 / p99, and `slowest`: the mean of each phase over the slowest 1 % by `generator`
 * (percentiles of parts do not add up; these do, apart from clock offset between processes).
 */
export interface AckPhases {
  count: number;
  /** The bot's clock minus the generator's (ms), taken out of the phases that cross processes. */
  clockOffsetMs: number;
  p50: Record<AckPhase, number>;
  p99: Record<AckPhase, number>;
  slowest: Record<AckPhase, number>;
}
type AckPhase = 'queued' | 'toBot' | 'toReceipt' | 'receipt' | 'toAck' | 'inBot' | 'back' | 'wire' | 'served' | 'generator' | 'botCpu';
const PHASES: AckPhase[] = ['queued', 'toBot', 'toReceipt', 'receipt', 'toAck', 'inBot', 'back', 'wire', 'served', 'generator', 'botCpu'];

/** The bot's CPU ms at wall time `at`, interpolated between its readings (sorted by wall time). */
function cpuAt(clock: BotStats['cpuClock'], at: number): number {
  if (clock.length === 0) return NaN;
  let lo = 0;
  let hi = clock.length - 1;
  if (at <= clock[0]![0]) return clock[0]![1];
  if (at >= clock[hi]![0]) return clock[hi]![1];
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (clock[mid]![0] <= at) lo = mid;
    else hi = mid;
  }
  const [w0, c0] = clock[lo]!;
  const [w1, c1] = clock[hi]!;
  return w1 === w0 ? c1 : c0 + ((c1 - c0) * (at - w0)) / (w1 - w0);
}

/** The generator's timestamps of one event POST (wall ms), keyed by its id (ID_HEADER). */
interface SentRequest { round: number; called: number; written?: number; headers?: number; resolved?: number }
const ID_HEADER = 'x-bench-id';
const sentRequests = new Map<string, SentRequest>();
const wallNow = () => performance.timeOrigin + performance.now();
const idOf = (request: unknown): string | undefined => {
  const h = (request as { headers?: unknown }).headers;
  if (!Array.isArray(h)) return undefined;
  const i = h.indexOf(ID_HEADER);
  return i >= 0 ? String(h[i + 1]) : undefined;
};
// undici (Node's fetch) publishes when it writes a request's headers and when it has the response's.
diagnostics.subscribe('undici:client:sendHeaders', (m) => {
  const r = sentRequests.get(idOf((m as { request: unknown }).request) ?? '');
  if (r && r.written === undefined) r.written = wallNow();
});
diagnostics.subscribe('undici:request:headers', (m) => {
  const r = sentRequests.get(idOf((m as { request: unknown }).request) ?? '');
  if (r && r.headers === undefined) r.headers = wallNow();
});

/**
 * How far the bot's wall clock (its performance.timeOrigin + now) is ahead of the generator's: the
 * two processes' origins were measured 30-50 ms apart in some runs. Both one-way trips (written →
 * arrived, finished → read) take at least ~0 ms on loopback, so their smallest values, measured
 * with the offset in opposite directions, put it halfway between them.
 */
function clockOffset(sent: Map<string, SentRequest>, bot: BotStats['requests']): number {
  let toBot = Infinity;
  let back = Infinity;
  for (const [id, arrived, , , finished] of bot) {
    const g = sent.get(id);
    if (g?.written === undefined || g.headers === undefined) continue;
    toBot = Math.min(toBot, arrived - g.written);
    back = Math.min(back, g.headers - finished);
  }
  return Number.isFinite(toBot) && Number.isFinite(back) ? (toBot - back) / 2 : 0;
}

function ackPhases(sent: Map<string, SentRequest>, bot: BotStats['requests'], clock: BotStats['cpuClock'], rounds: (round: number) => boolean): AckPhases {
  const rows: Record<AckPhase, number>[] = [];
  const offset = clockOffset(sent, bot);
  for (const [id, arrivedOnBotClock, receiptStart, receiptEnd, finishedOnBotClock] of bot) {
    const g = sent.get(id);
    if (!g || !rounds(g.round) || g.written === undefined || g.headers === undefined || g.resolved === undefined) continue;
    const arrived = arrivedOnBotClock - offset;
    const finished = finishedOnBotClock - offset;
    const journaled = receiptStart > 0;
    rows.push({
      queued: g.written - g.called,
      toBot: arrived - g.written,
      toReceipt: journaled ? receiptStart - arrivedOnBotClock : NaN,
      receipt: journaled ? receiptEnd - receiptStart : NaN,
      toAck: finishedOnBotClock - (journaled ? receiptEnd : arrivedOnBotClock),
      inBot: finished - arrived,
      back: g.headers - finished,
      wire: g.headers - g.written,
      served: finished - g.written,
      generator: g.resolved - g.called,
      botCpu: cpuAt(clock, finishedOnBotClock) - cpuAt(clock, g.written + offset),
    });
  }
  const of = (f: (r: Record<AckPhase, number>) => number, list = rows) => list.map(f).filter((v) => !Number.isNaN(v));
  const each = (fn: (values: number[]) => number, list = rows) => Object.fromEntries(PHASES.map((p) => [p, round(fn(of((r) => r[p], list)), 1)])) as Record<AckPhase, number>;
  const slow = [...rows].sort((a, b) => b.generator - a.generator).slice(0, Math.max(1, Math.ceil(rows.length / 100)));
  const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN);
  return { count: rows.length, clockOffsetMs: round(offset, 1), p50: each((v) => percentile(v, 50)), p99: each((v) => percentile(v, 99)), slowest: each(mean, slow) };
}

const describePhases = (label: string, a: AckPhases) =>
  `${label} (${a.count}): ` + PHASES.map((p) => `${p} ${a.p50[p]}/${a.p99[p]}`).join(', ') + `; slowest 1 % (mean): ` + PHASES.map((p) => `${p} ${a.slowest[p]}`).join(', ');

export interface ThroughputResult { modelLatencyMs: number; /** Unset: the shipped default. */ maxConcurrentTurns?: number; rows: ThroughputRow[]; errors: string[]; setup?: string }

/**
 * Where the bot keeps its state and how many bot processes share the load. With several, each
 * event goes to the next process in turn (as a round-robin load balancer would send it), so the
 * two deliveries of one mention usually reach different instances.
 */
export interface StoreSetup {
  label: string;
  /** Unset: SQLite in the bot's data dir. */
  storeUrl?: string;
  instances: number;
}

export const SQLITE_ONE: StoreSetup = { label: 'SQLite, 1 instance', instances: 1 };

// BENCH_LEVEL_DEADLINE_MS=<ms> lengthens it for a run on a machine shared with other work.
const LEVEL_DEADLINE_MS = Number(process.env.BENCH_LEVEL_DEADLINE_MS) || 120_000;
const REPLY_TIMEOUT_MS = 60_000;
/** The send time the bot process reads (SENT_HEADER there; a value import would run that process's main here). */
const SENT_HEADER = 'x-bench-sent-at';
// Shipped settings (the goal is stated for them); BENCH_MAX_TURNS=<n> sets HERMES_MAX_CONCURRENT_TURNS
// for a diagnostic run.
const MAX_CONCURRENT_TURNS: number | undefined = process.env.BENCH_MAX_TURNS ? Number(process.env.BENCH_MAX_TURNS) : undefined;

/** Resolves a channel's waiter the moment the fake Slack records a bot post there. */
function replyWatcher(slack: FakeSlack) {
  const waiters = new Map<string, (call: ApiCall) => void>();
  const push = slack.calls.push.bind(slack.calls);
  // The fake records a call before answering it; status and ts are set synchronously after.
  slack.calls.push = (...items: ApiCall[]) => {
    const n = push(...items);
    for (const call of items) {
      if (call.method !== 'chat.postMessage') continue;
      queueMicrotask(() => {
        if (call.status !== 200) return;
        // A reply goes into the thread of the mention it answers: a late answer to one question must
        // not be taken for the next one's.
        const key = `${String(call.args.channel)}/${String(call.args.thread_ts ?? '')}`;
        const w = waiters.get(key);
        waiters.delete(key);
        w?.(call);
      });
    }
    return n;
  };
  return {
    wait: (channel: string, threadTs: string) =>
      new Promise<ApiCall>((resolve, reject) => {
        const key = `${channel}/${threadTs}`;
        const timer = setTimeout(() => {
          waiters.delete(key);
          reject(new Error(`no reply in ${channel} within ${REPLY_TIMEOUT_MS} ms`));
        }, REPLY_TIMEOUT_MS);
        waiters.set(key, (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      }),
  };
}

function request<T extends BotMessage['type']>(child: ChildProcess, msg: { type: string } | undefined, want: T, timeoutMs = 60_000): Promise<Extract<BotMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', on);
      reject(new Error(`bot process did not answer ${want} within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (m: BotMessage) => {
      if (m.type === 'error') reject(new Error(`bot process: ${m.message}`));
      else if (m.type !== want) return;
      clearTimeout(timer);
      child.off('message', on);
      resolve(m as Extract<BotMessage, { type: T }>);
    };
    child.on('message', on);
    // A level past its deadline keeps running after its bot was stopped: a send to the closed
    // channel must reject this request, not emit an 'error' nobody listens to (which ends the bench).
    if (msg) {
      child.send(msg, (err) => {
        if (!err) return;
        clearTimeout(timer);
        child.off('message', on);
        reject(err);
      });
    }
  });
}

export async function runThroughput(sizes: ThroughputSizes, log: (line: string) => void, setup: StoreSetup = SQLITE_ONE): Promise<ThroughputResult> {
  const slack = await startFakeSlack();
  const ai = await startFakeOpenAI({ latencyMs: sizes.modelLatencyMs });
  const dataDirs = await Promise.all(Array.from({ length: setup.instances }, () => mkdtemp(path.join(os.tmpdir(), 'hermes-bench-slack-'))));
  // Compiled like `npm start` runs the bot. BENCH_BOT_CPU_PROF=<dir> writes a V8 CPU profile of
  // each measured window there (slack-bot-process.ts).
  const entry = await compileBenchEntry('slack-bot-process.ts');
  const children = dataDirs.map((dataDir) => fork(entry, [], {
    // As `npm start` runs the bot (its Node options); BENCH_BOT_NODE_FLAGS replaces them for a diagnostic run.
    execArgv: process.env.BENCH_BOT_NODE_FLAGS !== undefined ? process.env.BENCH_BOT_NODE_FLAGS.split(' ').filter(Boolean) : startNodeOptions(),
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: {
      ...process.env,
      OPENAI_BASE_URL: ai.url,
      OPENAI_API_KEY: 'bench-key',
      HERMES_MODEL_RETRIES: '0',
      HERMES_DATA_DIR: dataDir,
      ...(MAX_CONCURRENT_TURNS === undefined ? {} : { HERMES_MAX_CONCURRENT_TURNS: String(MAX_CONCURRENT_TURNS) }),
      // The bench measures the bot's capacity, not one person's pace: one user per channel sends
      // 30 questions as fast as answers come, which HERMES_USER_RATE would rightly refuse.
      HERMES_USER_RATE: '0',
      // Answers are counted as posts; streaming's own cost is measured apart.
      HERMES_STREAMING: 'off',
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
      PORT: '0',
      ...(setup.storeUrl ? { HERMES_STORE_URL: setup.storeUrl } : {}),
    },
  }));
  const errors: string[] = [];
  const rows: ThroughputRow[] = [];
  const watcher = replyWatcher(slack);
  const all = <T extends BotMessage['type']>(msg: { type: string } | undefined, want: T) => Promise.all(children.map((c) => request(c, msg, want)));
  try {
    const targets = (await all(undefined, 'ready')).map(({ port }) => `http://127.0.0.1:${port}/slack/events`);
    let turn = 0;
    const nextTarget = () => targets[turn++ % targets.length]!;
    let channelBase = 0;
    let eventNo = 0;
    for (const n of sizes.sessions) {
      channelBase += 1000;
      const channels = Array.from({ length: n }, (_, i) => `C${channelBase + i}`);
      const acks: number[] = [];
      const above: number[] = [];
      let failures = 0;

      // Every session sends its first measured mention at the same instant (a burst of 2n requests);
      // later rounds spread out with the replies. Their acks are also reported apart.
      const laterAcks: number[] = [];
      sentRequests.clear();
      // Deliveries the bot did not acknowledge with 200 (each was delivered again, as Slack does).
      const notAcked: string[] = [];
      // The generator's CPU from the burst's start to its last answer read (burstCost).
      let burstCpu0: NodeJS.CpuUsage | undefined;
      let burstGeneratorCpuMs = NaN;
      const mention = async (channel: string, user: string, text: string, record: boolean, roundNo: number) => {
        const ts = slack.nextTs();
        const common = { user, text: `<@${slack.botUserId}> ${text}`, ts, channel };
        const post = async (event: Record<string, unknown>) => {
          const eventId = `EvB${++eventNo}`;
          const t0 = performance.now();
          // The request's event_id, also sent as ID_HEADER, joins the generator's and the bot's times of it.
          const id = eventId;
          const timing: SentRequest = { round: roundNo, called: performance.timeOrigin + t0 };
          if (record) sentRequests.set(id, timing);
          // Wall-clock send time, so the bot can tell how long the request took to reach its HTTP server.
          const res = await slack.sendEvent(nextTarget(), event, { eventId, headers: { [SENT_HEADER]: String(performance.timeOrigin + t0), [ID_HEADER]: id } });
          timing.resolved = wallNow();
          // Read at every answer of the burst, so a burst with requests that failed still has its last one's.
          if (record && roundNo === 0 && burstCpu0) {
            const c = process.cpuUsage(burstCpu0);
            burstGeneratorCpuMs = (c.user + c.system) / 1000;
          }
          const ms = performance.now() - t0;
          if (record) acks.push(ms);
          if (record && roundNo > 0) laterAcks.push(ms);
          if (res.status === 200) return;
          // Not acknowledged (Bolt answers 404 to a request it could not acknowledge within 3 s): Slack
          // delivers the same event again at once, marked as a retry, to whichever instance the
          // balancer picks; so does the bench, once. The first delivery may still be handled.
          if (record) notAcked.push(`${res.status} after ${Math.round(ms)} ms`);
          const again = await slack.sendEvent(nextTarget(), event, { eventId, retryNum: 1, headers: { [SENT_HEADER]: String(performance.timeOrigin + performance.now()) } });
          if (again.status !== 200) throw new Error(`event answered ${res.status}, then ${again.status} to Slack's retry`);
        };
        const sentAt = Date.now();
        const reply = watcher.wait(channel, ts);
        // If a delivery fails, the reply is never awaited: its timeout must not crash the bench.
        reply.catch(() => undefined);
        // Slack delivers a channel mention twice: app_mention and message.channels.
        await Promise.all([post({ type: 'app_mention', ...common }), post({ type: 'message', channel_type: 'channel', ...common })]);
        const call = await reply;
        if (record) above.push(call.at - sentAt - sizes.modelLatencyMs);
      };
      const session = async (channel: string, i: number, rounds: number, record: boolean) => {
        for (let r = 0; r < rounds; r++) {
          try {
            await mention(channel, `U${i}`, `question ${r}`, record, r);
          } catch (err) {
            failures += record ? 1 : 0;
            if (errors.length < 10) errors.push(`${n} sessions, ${channel}: ${(err as Error).message}`);
          }
        }
      };

      try {
        await withDeadline(`throughput at ${n} sessions`, LEVEL_DEADLINE_MS, async () => {
          // One unmeasured round creates the sessions and warms caches (user names, JIT).
          await Promise.all(channels.map((c, i) => session(c, i, 1, false)));
          await all({ type: 'reset' }, 'reset-ok');
          const ownLag = monitorEventLoopDelay({ resolution: 10 });
          ownLag.enable();
          const rounds = sizes.rounds(n);
          const t0 = performance.now();
          const ownCpu0 = process.cpuUsage();
          burstCpu0 = ownCpu0;
          await Promise.all(channels.map((c, i) => session(c, i, rounds, true)));
          const seconds = (performance.now() - t0) / 1000;
          const ownCpu = process.cpuUsage(ownCpu0);
          ownLag.disable();
          const stats = combine((await all({ type: 'stats' }, 'stats')).map((m) => m.stats));
          const phases = {
            firstRound: ackPhases(sentRequests, stats.requests, stats.cpuClock, (r) => r === 0),
            laterRounds: ackPhases(sentRequests, stats.requests, stats.cpuClock, (r) => r > 0),
            all: ackPhases(sentRequests, stats.requests, stats.cpuClock, () => true),
          };
          const burst = burstCost(sentRequests, stats.requests, stats.cpuClock, burstGeneratorCpuMs);
          sentRequests.clear();
          // A delivery not acknowledged may still have been handled, and Slack's retry must not be
          // answered twice: threads of this level with more than one bot post.
          const perThread = new Map<string, string[]>();
          for (const p of slack.posts()) {
            if (!channels.includes(p.channel)) continue;
            const key = `${p.channel}/${p.thread_ts ?? ''}`;
            perThread.set(key, [...(perThread.get(key) ?? []), p.text.slice(0, 40)]);
          }
          const doubled = [...perThread.entries()].filter(([, texts]) => texts.length > 1);
          rows.push({ ...toRow(n, above.length, seconds, sizes.modelLatencyMs, above, acks, stats, failures, ownLag.percentile(99) / 1e6, (ownCpu.user + ownCpu.system) / 1000), ackAfterFirstRoundP99Ms: round(percentile(laterAcks, 99), 1), ackPhases: phases, ...(burst && { burst }), notAcked: notAcked.length, notAckedSample: notAcked.slice(0, 5), threadsAnsweredTwice: doubled.length });
          if (doubled.length > 0) errors.push(`${n} sessions: ${doubled.length} threads with more than one bot post, e.g. ${JSON.stringify(doubled.slice(0, 3))}`);
          const row = rows.at(-1)!;
          log(`ack phases at ${n} sessions, ms p50/p99: ${describePhases('first round', phases.firstRound)}`);
          log(`ack phases at ${n} sessions, ms p50/p99: ${describePhases('later rounds', phases.laterRounds)}`);
          log(`ack phases at ${n} sessions, ms p50/p99: ${describePhases('all', phases.all)}`);
          if (burst) log(`opening burst at ${n} sessions: ${burst.requests} requests answered ${burst.wallMs} ms after the first was written; bot CPU ${burst.botCpuMs} ms (${burst.botCpuMsPerAck} ms per ack, everything it ran included); generator CPU ${burst.generatorCpuMs} ms from its first call to its last answer read (${burst.generatorCpuMsPerRequest} ms per request)`);
          log(`throughput (${setup.label}): ${n} sessions → ${row.repliesPerSecond} replies/s; ack p99 ${row.ackP99Ms} ms (written → served p99 ${phases.all.p99.served}, first round ${phases.firstRound.p99.served}, later ${phases.laterRounds.p99.served}; generator's send-side queueing p99 ${phases.all.p99.queued}; bot CPU from written to served p99 ${phases.all.p99.botCpu}, first round ${phases.firstRound.p99.botCpu}, later ${phases.laterRounds.p99.botCpu}; rounds after the first ${row.ackAfterFirstRoundP99Ms}; before the bot's server p50 ${row.beforeServerP50Ms} p99 ${row.beforeServerP99Ms}, inside ${row.serverAckP99Ms}); lag p99 ${row.eventLoopLagP99Ms} ms; ${row.botCpuMsPerReply} CPU ms/reply (${row.botCpuPercent} % of a core; generator ${row.generatorCpuPercent} %); peak RSS ${row.peakRssMb} MB; ${row.failures} failed, ${row.notAcked} deliveries not acknowledged (${row.notAckedSample?.join(', ')})`);
        });
      } catch (err) {
        errors.push((err as Error).message);
        break;
      }
    }
  } finally {
    await Promise.all(children.map(stopChild));
    await Promise.all([slack.close(), ai.close()]);
    await Promise.all(dataDirs.map((d) => rm(d, { recursive: true, force: true })));
  }
  return { modelLatencyMs: sizes.modelLatencyMs, maxConcurrentTurns: MAX_CONCURRENT_TURNS, rows, errors, setup: setup.label };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (!child.connected) return;
  child.send({ type: 'stop' });
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      resolve();
    }, 10_000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** Several bot processes as one: CPU and store calls add up; lag and RSS are the worst process's. */
function combine(all: BotStats[]): BotStats {
  const max = (f: (s: BotStats) => number) => Math.max(...all.map(f));
  const sum = (f: (s: BotStats) => number) => all.reduce((a, s) => a + f(s), 0);
  return {
    lagP50Ms: max((s) => s.lagP50Ms),
    lagP99Ms: max((s) => s.lagP99Ms),
    lagMaxMs: max((s) => s.lagMaxMs),
    peakRssMb: max((s) => s.peakRssMb),
    cpuMs: sum((s) => s.cpuMs),
    storeOps: sum((s) => s.storeOps),
    storeWaitMs: sum((s) => s.storeWaitMs),
    serverAckMs: all.flatMap((s) => s.serverAckMs),
    beforeServerMs: all.flatMap((s) => s.beforeServerMs),
    requests: all.flatMap((s) => s.requests),
    // A request's CPU figure needs the clock of the process that served it: with several, none is given.
    cpuClock: all.length === 1 ? all[0]!.cpuClock : [],
  };
}

function toRow(n: number, replies: number, seconds: number, latencyMs: number, above: number[], acks: number[], stats: BotStats, failures: number, generatorLagMs: number, generatorCpuMs: number): ThroughputRow {
  const limit = n / (latencyMs / 1000);
  const rps = replies / seconds;
  return {
    sessions: n,
    replies,
    seconds: round(seconds, 2),
    repliesPerSecond: round(rps, 1),
    physicalLimit: round(limit, 1),
    percentOfLimit: round((rps / limit) * 100, 1),
    replyAboveModelP50Ms: round(percentile(above, 50), 1),
    replyAboveModelP99Ms: round(percentile(above, 99), 1),
    ackP50Ms: round(percentile(acks, 50), 1),
    ackP99Ms: round(percentile(acks, 99), 1),
    serverAckP99Ms: round(percentile(stats.serverAckMs, 99), 1),
    beforeServerP50Ms: round(percentile(stats.beforeServerMs, 50), 1),
    beforeServerP99Ms: round(percentile(stats.beforeServerMs, 99), 1),
    eventLoopLagP99Ms: round(stats.lagP99Ms, 1),
    peakRssMb: round(stats.peakRssMb, 1),
    failures,
    botCpuMsPerReply: round(stats.cpuMs / Math.max(1, replies), 2),
    botCpuPercent: round((stats.cpuMs / (seconds * 1000)) * 100, 1),
    storeOpsPerReply: round(stats.storeOps / Math.max(1, replies), 1),
    storeWaitMsPerOp: round(stats.storeWaitMs / Math.max(1, stats.storeOps), 2),
    generatorLagP99Ms: round(generatorLagMs, 1),
    generatorCpuPercent: round((generatorCpuMs / (seconds * 1000)) * 100, 1),
  };
}
