import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/basics/types.js';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { startFakeOpenAI, type ChatCompletionRequestBody, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * Instance A is a real process; it accepts three messages for one session and is killed with -9
 * in the middle of the first turn. Instance B, started afterwards on the same database, takes the
 * session over once A's lease expires: the cut-off turn is reported interrupted (as after a
 * restart: it may have had side effects), the two queued messages are answered, in order.
 */
const pgUrl = await postgresForTests();
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** The queue's own guarantees are under test here: messages wait for their turns instead of steering the running one. */
const QUEUE = { HERMES_BUSY_MODE: 'queue' };

type Line = { kind: string; text?: string; id?: string; verdict?: string };

function startInstance(env: Record<string, string>): { child: ChildProcessWithoutNullStreams; lines: Line[]; waitFor(pred: (l: Line) => boolean, ms?: number): Promise<Line> } {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures/instance.ts')], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Line[] = [];
  let buf = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)) as Line);
      buf = buf.slice(i + 1);
    }
  });
  const waitFor = (pred: (l: Line) => boolean, ms = 60_000) =>
    new Promise<Line>((resolve, reject) => {
      const started = Date.now();
      const tick = () => {
        const hit = lines.find(pred);
        if (hit) return resolve(hit);
        if (child.exitCode !== null) return reject(new Error(`instance exited (${child.exitCode}): ${err}`));
        if (Date.now() - started > ms) return reject(new Error(`timed out; lines ${JSON.stringify(lines)}; stderr ${err}`));
        setTimeout(tick, 25);
      };
      tick();
    });
  return { child, lines, waitFor };
}

const lastUser = (req: ChatCompletionRequestBody) =>
  String([...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '').replace(/^\[from [^\]]*\] /, '');

describe.skipIf(!pgUrl)('an instance killed with -9', () => {
  it('leaves its accepted messages to another instance: the cut-off turn reported, the queued ones answered in order', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const fake: FakeOpenAI = await startFakeOpenAI({
      handler: (req) => (lastUser(req).includes('slow') ? { text: 'too late', delayMs: 120_000 } : { text: `answer to ${lastUser(req)}` }),
    });
    cleanups.push(() => fake.close());
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-kill-a-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));

    const a = startInstance({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: FAKE_OPENAI_KEY, HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir, HERMES_STORE_URL: schema.url, HERMES_PROGRESS_DELAY_MS: '0', ...QUEUE });
    cleanups.push(async () => a.child.kill('SIGKILL'));
    await a.waitFor((l) => l.kind === 'ready');
    const place = conv('C_kill', { threadId: '3.3' });
    const msg = (id: string, text: string): InboundMessage => ({ id, conversation: place, speaker: user('U_K'), text, mentioned: true, replyTo: '3.3' });
    a.child.stdin.write(`${JSON.stringify(msg('k1', 'slow one'))}\n`);
    await waitUntil(() => fake.requests.some((r) => lastUser(r) === 'slow one'));
    a.child.stdin.write(`${JSON.stringify(msg('k2', 'second'))}\n${JSON.stringify(msg('k3', 'third'))}\n`);
    await a.waitFor((l) => l.kind === 'accepted' && l.id === 'k3');
    expect(a.lines.filter((l) => l.kind === 'accepted').map((l) => l.verdict)).toEqual(['queued', 'queued', 'queued']);

    a.child.kill('SIGKILL');
    await new Promise((r) => a.child.once('exit', r));

    const b: Harness = await startHarness({ fake, env: { HERMES_STORE_URL: schema.url, ...QUEUE }, core: { clusterTiming: { leaseMs: 1_500, pollMs: 200 } } });
    cleanups.push(() => b.close());
    const answers = await b.port.waitForCount(isText, 3, 30_000);
    expect(answers.map((e) => (e.kind === 'text' ? e.text : ''))).toEqual([RESTART_INTERRUPTED, 'answer to second', 'answer to third']);
    expect(a.lines.filter((l) => l.kind === 'text')).toEqual([]);
    // The interrupted turn was not run again: the slow message reached the model once.
    expect(fake.requests.filter((r) => lastUser(r) === 'slow one')).toHaveLength(1);
  }, 120_000);

  it('loses no steering message: one taken into a turn that is killed is answered, once, by the instance that takes over', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    // A's turn: a tool call first (held until the steering message is accepted), so the turn makes a
    // second model call, before which it takes the steering message in; that call outlives A.
    let release!: () => void;
    const accepted = new Promise<void>((r) => (release = r));
    const fake: FakeOpenAI = await startFakeOpenAI({
      handler: async (req, i) => {
        if (i === 0) {
          await accepted;
          return { toolCalls: [{ name: 'look_up', arguments: { q: 'x' } }] };
        }
        return i === 1 ? { text: 'too late', delayMs: 120_000 } : { text: `answer to ${userTurns(req).join(' + ')}` };
      },
    });
    cleanups.push(() => fake.close());
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-kill-steer-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));

    const a = startInstance({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: FAKE_OPENAI_KEY, HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir, HERMES_STORE_URL: schema.url, HERMES_PROGRESS_DELAY_MS: '0', HERMES_GROUNDING: 'off' });
    cleanups.push(async () => a.child.kill('SIGKILL'));
    await a.waitFor((l) => l.kind === 'ready');
    const place = conv('C_steer', { threadId: '4.4' });
    const msg = (id: string, text: string): InboundMessage => ({ id, conversation: place, speaker: user('U_S'), text, mentioned: true, replyTo: id });
    a.child.stdin.write(`${JSON.stringify(msg('s1', 'research x'))}\n`);
    await waitUntil(() => fake.requests.length === 1);
    a.child.stdin.write(`${JSON.stringify(msg('s2', 'also check y'))}\n`);
    await a.waitFor((l) => l.kind === 'accepted' && l.id === 's2');
    release();
    // A took the message into its turn (marked seen) and is in the model call after it.
    await a.waitFor((l) => l.kind === 'seen' && l.id === 's2');
    await waitUntil(() => fake.requests.length === 2);
    expect(userTurns(fake.requests[1]!)).toEqual(['research x', 'also check y']);
    a.child.kill('SIGKILL');
    await new Promise((r) => a.child.once('exit', r));

    const b: Harness = await startHarness({ fake, env: { HERMES_STORE_URL: schema.url, HERMES_GROUNDING: 'off' }, core: { clusterTiming: { leaseMs: 1_500, pollMs: 200 } } });
    cleanups.push(() => b.close());
    const answers = await b.port.waitForCount(isText, 2, 30_000);
    await b.core.gateway.idle();
    // The cut-off turn is reported; the steering message is answered, and it is in the history once.
    expect(answers.map((e) => (e.kind === 'text' ? e.text : ''))).toEqual([RESTART_INTERRUPTED, 'answer to research x + also check y']);
    expect(fake.requests).toHaveLength(3);
    expect(a.lines.filter((l) => l.kind === 'text')).toEqual([]);
  }, 120_000);
});

const userTurns = (req: ChatCompletionRequestBody): string[] =>
  req.messages.filter((m) => m.role === 'user' && !String(m.content).startsWith('[system note]')).map((m) => String(m.content).replace(/^\[from [^\]]*\] /, ''));

async function waitUntil(check: () => boolean, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}
