import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../src/build-state.mjs';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';
import { ensureBuilt } from '../helpers/ensure-build.js';
import { waitFor } from '../helpers/wait-for.js';
import { TOKEN } from '../dashboard/dashboard-helper.js';

/**
 * The compiled bot (what `npm start` runs) in Slack HTTP mode with the dashboard on: one HTTP
 * server on PORT answers Slack's events, the dashboard and /healthz, and the process listens on
 * exactly one TCP port.
 */

let slack: FakeSlack;
let ai: FakeOpenAI;
let dir = '';
let child: ChildProcess | undefined;
let stdout = '';
const exited = () => child?.exitCode !== null || child?.signalCode !== null;

beforeAll(async () => {
  await ensureBuilt();
  [slack, ai, dir] = await Promise.all([startFakeSlack(), startFakeOpenAI(), mkdtemp(path.join(os.tmpdir(), 'hermes-one-http-'))]);
}, 300_000);

afterAll(async () => {
  if (child && !exited()) {
    const gone = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  }
  await Promise.all([slack?.close(), ai?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Resolves with the first match of `pattern` in the bot's stdout, as the lines arrive. */
function line(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = pattern.exec(stdout);
      if (!m) return false;
      done();
      resolve(m);
      return true;
    };
    const onData = () => void check();
    const onExit = () => {
      done();
      reject(new Error(`the bot exited before logging ${pattern}; stdout:\n${stdout}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${pattern} within ${timeoutMs} ms; stdout:\n${stdout}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child!.stdout!.off('data', onData);
      child!.off('exit', onExit);
    };
    child!.stdout!.on('data', onData);
    child!.once('exit', onExit);
    check();
  });
}

/** TCP ports the process listens on, from /proc (its socket inodes matched to LISTEN entries). */
async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1]!);
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const row of text.split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      // local_address is HEX_IP:HEX_PORT, st 0A is LISTEN, the inode is the tenth column.
      if (cols[3] === '0A' && inodes.has(cols[9]!)) ports.add(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return [...ports];
}

describe('one HTTP server on PORT', () => {
  it('answers POST /slack/events, /dashboard and /healthz on the same port, the only one it listens on', { timeout: 120_000 }, async () => {
    child = spawn(process.execPath, ['src/launch.mjs', 'src/main.js'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '', HOME: dir, LOG_LEVEL: 'info',
        OPENAI_BASE_URL: ai.url, OPENAI_API_KEY: 'test-key', HERMES_MODEL_RETRIES: '0', HERMES_STREAMING: 'off',
        HERMES_DATA_DIR: dir, SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl,
        PORT: '0', HERMES_DASHBOARD_TOKEN: TOKEN,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => void (stdout += d));
    child.stderr!.resume();
    const port = Number((await line(/"port":(\d+),"msg":"http: listening on PORT"/))[1]);
    await line(/"msg":"ready"/);
    const base = `http://127.0.0.1:${port}`;

    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    ai.enqueue({ text: 'Hello from the one server.' });
    expect((await slack.sendEvent(`${base}/slack/events`, { type: 'message', channel_type: 'im', user: 'U1', text: 'are you there?', ts: slack.nextTs(), channel: 'D1' })).status).toBe(200);
    await slack.waitFor('the answer', () => slack.posts().some((p) => p.text === 'Hello from the one server.'), 60_000);
    // Slack's route keeps its checks: unsigned is refused, and GET is not a Slack request.
    expect((await fetch(`${base}/slack/events`, { method: 'POST', body: '{}', headers: { 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)) } })).status).toBe(401);
    expect((await fetch(`${base}/slack/events`)).status).toBe(405);

    const signIn = await fetch(`${base}/dashboard/login`, { method: 'POST', body: new URLSearchParams({ token: TOKEN }), redirect: 'manual' });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    // The bot writes the trace in the background after the answer: another process's file.
    await waitFor('the turn on the dashboard', async () => (await (await fetch(`${base}/dashboard/turns?platform=slack`, { headers: { cookie } })).text()).includes('are you there?'));
    expect((await fetch(`${base}/nothing-here`)).status).toBe(404);

    if (existsSync(`/proc/${child.pid}/fd`)) expect(await listeningPorts(child.pid!)).toEqual([port]);
  });
});
