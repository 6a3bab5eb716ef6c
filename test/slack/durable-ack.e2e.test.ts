import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';

/**
 * A message Slack was told we received survives kill -9 right after the 200: the real bot
 * process (npm start's entry point) against fake Slack and OpenAI. users.info is held back, so
 * without a write before the ack the message would only live in memory when the process dies.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
let slack: FakeSlack | undefined;
let ai: FakeOpenAI | undefined;
let dir: string | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child?.exitCode === null) child.kill('SIGKILL');
  await Promise.all([slack?.close(), ai?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

function startBot(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts')], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
}

async function waitHealthy(base: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error('the bot did not become ready');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('durable before the ack (kill -9)', () => {
  it('answers a message acknowledged right before the process was killed', { timeout: 150_000 }, async () => {
    slack = await startFakeSlack();
    ai = await startFakeOpenAI();
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-kill-ack-'));
    const port = await freePort();
    const env = { OPENAI_BASE_URL: ai.url, OPENAI_API_KEY: 'test', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dir, SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port), HERMES_STREAMING: 'off' };
    const base = `http://127.0.0.1:${port}`;
    child = startBot(env);
    await waitHealthy(base);

    slack.delayNext('users.info', 5_000);
    const started = Date.now();
    const res = await slack.sendEvent(`${base}/slack/events`, { type: 'message', channel_type: 'im', user: 'U1', text: 'still there after a crash?', ts: slack.nextTs(), channel: 'D1' });
    const ackMs = Date.now() - started;
    expect(res.status).toBe(200);
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    console.log(`ack latency before the kill: ${ackMs} ms`);

    ai.enqueue({ text: 'Yes, I still have your message.' });
    child = startBot(env);
    await waitHealthy(base);
    await slack.waitFor('the answer after the restart', () => slack!.posts().some((p) => p.text === 'Yes, I still have your message.'), 60_000);
    const asked = JSON.stringify(ai.requests.at(-1)?.messages);
    expect(asked).toContain('still there after a crash?');
  });
});
