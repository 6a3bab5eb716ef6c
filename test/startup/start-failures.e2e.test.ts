import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REACHABLE_ROOTS } from '../../src/capabilities/sandbox/workspace-root.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';

/**
 * What an operator sees when the start fails or is unusual: a taken PORT is one line and exit 2;
 * an unreachable Discord is said once; as root with the data under a private folder, run_code is
 * still offered. The real entry point, spawned as `npm start` would run it.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const MAIN = path.join(ROOT, 'src/main.ts');

let fake: FakeOpenAI;
let slack: FakeSlack;
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  [fake, slack] = await Promise.all([startFakeOpenAI(), startFakeSlack()]);
});
afterAll(async () => {
  await Promise.all([fake.close(), slack.close()]);
  for (const c of cleanups) await c();
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'hermes-startfail-'));
  cleanups.push(() => rm(d, { recursive: true, force: true }));
  return d;
}

function run(env: Record<string, string>, input: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [MAIN], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), LOG_LEVEL: 'warn', OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'k', HERMES_MODEL_RETRIES: '0', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out; stdout:\n${stdout}\nstderr:\n${stderr}`));
    }, 90_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input.map((l) => `${l}\n`).join(''));
  });
}

describe('start failures, said once', () => {
  it('a PORT another program holds: one line naming PORT, exit 2', async () => {
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, r));
    cleanups.push(() => new Promise((r) => holder.close(r)));
    const port = (holder.address() as net.AddressInfo).port;
    const r = await run({ HERMES_DATA_DIR: await tempDir(), SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port) });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([`config error: PORT ${port} is already in use by another program: stop that program, or set PORT to a free port.`]);
  }, 120_000);

  it('an unreachable Discord: its error once, exit 1', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r)); // nothing listens there now
    const r = await run({ HERMES_DATA_DIR: await tempDir(), DISCORD_TOKEN: 'abc.def.ghi', DISCORD_API_URL: `http://127.0.0.1:${port}/api` });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr.match(/Could not reach Discord/g), r.stderr).toHaveLength(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^hermes could not start: Could not reach Discord: .*Check DISCORD_API_URL/);
  }, 120_000);
});

describe.skipIf(process.getuid?.() !== 0)('as root, with the data folder under a private (0700) folder', () => {
  it('run_code is offered: the workspaces go where the sandbox user can reach them, and the log says where', async () => {
    const priv = await tempDir(); // mkdtemp: 0700, like /root
    const dataDir = path.join(priv, 'data');
    const moved = path.join(REACHABLE_ROOTS[0]!, createHash('sha256').update(dataDir).digest('hex').slice(0, 12));
    cleanups.push(() => rm(moved, { recursive: true, force: true }));
    const r = await run({ HERMES_DATA_DIR: dataDir, LOG_LEVEL: 'info' }, ['hello']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/run_code is not offered/);
    expect(r.stderr).toContain(`workspaces are in ${moved}: run_code's sandbox user (uid 65534) cannot pass through ${priv}`);
    // Nothing ran there, so the folder made for it is gone again after a clean exit.
    expect(existsSync(moved)).toBe(false);
    expect(existsSync(REACHABLE_ROOTS[0]!)).toBe(true);
  }, 120_000);
});
