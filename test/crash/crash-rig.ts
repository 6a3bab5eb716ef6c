import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll } from 'vitest';
import { ROOT } from '../../src/build-state.mjs';
import type { ChatCompletionRequestBody, FakeHandler } from '../fakes/openai/fake-openai.js';
import { ensureBuilt } from '../helpers/ensure-build.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';

/**
 * Pieces the kill -9 crash tests share: a seeded random (so a failing run can be repeated with
 * HERMES_CRASH_SEED), the real bot as an operator runs it (`node src/launch.mjs src/main.js`, the
 * compiled build) that the test can kill with SIGKILL and start again, and the scripted model the
 * bursts talk to.
 */

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function seededRandom(seed: number): { next(): number; int(lo: number, hi: number): number; chance(p: number): boolean } {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), chance: (p) => next() < p };
}

/** HERMES_CRASH_SEED when given (to repeat a failure), else a fresh one. */
export function crashSeed(): number {
  const given = process.env.HERMES_CRASH_SEED;
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 0) throw new Error(`HERMES_CRASH_SEED must be a whole number, not ${JSON.stringify(given)}`);
    return n;
  }
  return Math.floor(Math.random() * 2 ** 31);
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });

export interface BotProcess {
  readonly name: string;
  /** Alive: started and not yet exited. */
  alive(): boolean;
  /** stdout and stderr so far (the JSON log), for failure messages. */
  output(): string;
  /** Resolves once the log says `ready` (core started, adapters connected). */
  ready(timeoutMs?: number): Promise<void>;
  /** SIGKILL, and wait until the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (a graceful shutdown); SIGKILL if still running after 20 s. Resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** The compiled bot, as `npm start` runs it. Logs at info, so `ready` can be awaited. */
export function startBot(name: string, env: Record<string, string>): BotProcess {
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'src/launch.mjs'), 'src/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: string) => {
    out += d;
    // Only the tail is ever shown; a long run must not grow without bound.
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout!.setEncoding('utf8').on('data', keep);
  child.stderr!.setEncoding('utf8').on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    name,
    alive: () => !gone,
    output: () => out,
    async ready(timeoutMs = 60_000) {
      const until = Date.now() + timeoutMs;
      while (!/"msg":"ready"/.test(out)) {
        if (gone) throw new Error(`${name} exited before it was ready:\n${out.slice(-4000)}`);
        if (Date.now() > until) throw new Error(`${name} not ready within ${timeoutMs} ms:\n${out.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async kill9() {
      if (!gone) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (!gone) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** What every crashed bot runs with: the fake model, the webhook sink allowed, answers posted whole. */
export function botEnv(modelUrl: string, sinkPort: number, dataDir: string): Record<string, string> {
  return {
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: FAKE_OPENAI_KEY,
    HERMES_MODEL_RETRIES: '0',
    HERMES_DATA_DIR: dataDir,
    HERMES_NET_ALLOW: `127.0.0.1:${sinkPort}`,
    HERMES_STREAMING: 'off',
    HERMES_USER_RATE: '0',
    HERMES_GROUNDING: 'off',
    HERMES_VISION: 'off',
    // The working indicator is not what is judged here; without it a thread holds only the outcome.
    HERMES_PROGRESS_DELAY_MS: '600000',
    HERMES_MAX_CONCURRENT_TURNS: '6',
    // Each message its own turn, so each has its own answer to look for and the lane's order is
    // visible (steer, the default, folds a message sent during a turn into that turn's answer).
    HERMES_BUSY_MODE: 'queue',
  };
}

/** The user text of a request's last user message, without the speaker tag the bot adds. */
export function lastUserText(req: ChatCompletionRequestBody): string {
  const m = [...req.messages].reverse().find((x) => x.role === 'user');
  const text = typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
  return text.replace(/^\[from [^\]]*\]\s*/, '').trim();
}

/**
 * The model of the crash tests. A message is a tag (`b1-07`), or `approve <tag>`:
 * - a tag is answered `answer to <tag>` after a delay of 20–`maxDelayMs` ms, different per tag;
 * - `approve <tag>` calls send_webhook (which needs a person's approval) with `{tag}` to the sink,
 *   and once the call's result is in, answers `finished <tag>`.
 * The answer names its message, so the test can tell which message each post answers.
 */
export function crashModel(sinkUrl: string, seed: number, maxDelayMs = 400): FakeHandler {
  const delayOf = (tag: string) => seededRandom(seed ^ hash(tag)).int(Math.min(20, maxDelayMs), maxDelayMs);
  return (req) => {
    const last = req.messages.at(-1);
    const said = lastUserText(req);
    const approve = /^approve (\S+)$/.exec(said);
    if (last?.role === 'tool' && approve) return { text: `finished ${approve[1]}`, delayMs: delayOf(said) };
    if (approve) return { toolCalls: [{ name: 'send_webhook', arguments: { url: sinkUrl, body: { tag: approve[1] } } }], delayMs: delayOf(said) };
    return { text: `answer to ${said}`, delayMs: delayOf(said) };
  };
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Polls `check` every 25 ms until it is true; `what()` describes the wait when it times out. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A crash test file's lifecycle: the build is checked once before its tests (the bot runs from
 * `dist/`), and what a test pushes onto the returned list is closed after it, newest first, each
 * failure ignored (a killed process or a closed fake must not hide the test's own result).
 */
export function crashTestLifecycle(): Array<() => Promise<unknown>> {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });
  beforeAll(async () => {
    await ensureBuilt();
  }, 300_000);
  return cleanups;
}
