import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadCases } from '../../src/operations/eval/case-schema.js';
import { runCase } from '../../src/operations/eval/run-case.js';
import { main } from '../../src/operations/eval/replay-cli.js';
import { readTraceEvents } from '../../src/operations/eval/trace-reader.js';
import type { ReplayStep } from '../../src/operations/eval/replay.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startScriptedFake, type ScriptedFake } from './scripted-fake.js';
import { builtinTools } from '../../tools/index.js';
import { createCore } from '../../src/app/app.js';

/** A real trace from the core (time → calculator → answer), replayed against another "model". */
let dataDir = '';
let sf: ScriptedFake;
let other: FakeOpenAI;
let turnId = '';
let sessionId = '';

beforeAll(async () => {
  sf = await startScriptedFake();
  const c = (await loadCases(path.resolve('evals'))).find((x) => x.name === 'time-then-calculator')!;
  const r = await runCase(c, { env: sf.env, tools: builtinTools, createCore, keepData: true, onDataDir: (d) => (dataDir = d), onCaseReady: sf.hooks.beforeCase });
  expect(r.passed).toBe(true);
  const start = (await readTraceEvents(path.join(dataDir, 'traces'))).find((e) => e.type === 'turn_start');
  if (start?.type !== 'turn_start') throw new Error('no turn_start recorded');
  turnId = start.turnId;
  sessionId = start.sessionId;
  // The other model agrees on step 1 (other arguments), answers from its head at step 2, and answers at step 3.
  other = await startFakeOpenAI({
    handler: (req) => (req.messages.at(-1)?.role === 'user' ? { toolCalls: [{ name: 'get_current_time', arguments: {} }] } : { text: 'About 8 hours left.' }),
  });
});
afterAll(async () => {
  await sf?.close();
  await other?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: { OPENAI_API_KEY: 'k2', HERMES_MODEL_RETRIES: '0' }, cwd: process.cwd() }, { tools: builtinTools });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('npm run replay', () => {
  it('re-sends the exact recorded requests and shows where the tool-call path differs', async () => {
    const before = other.requests.length;
    const r = await run(['--turn', turnId.slice(0, 8), '--traces', path.join(dataDir, 'traces'), '--base-url', other.url, '--model', 'other-model']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const sent = other.requests.slice(before);
    expect(sent).toHaveLength(3);
    expect(sent.every((q) => q.model === 'other-model')).toBe(true);
    expect(sent[0]?.tools?.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(sf.fake.requests[0]?.tools?.map((t) => (t.type === 'function' ? t.function.name : '')));
    // Step 2's request carries the recorded time result: the history is the original run's.
    expect(JSON.stringify(sent[1]?.messages)).toContain('2026-03-14T09:26:53+00:00');
    expect(JSON.stringify(sent[1]?.messages)).toBe(JSON.stringify(sf.fake.requests[1]?.messages));
    expect(r.out).toMatch(/step 1: same tools, other arguments\n.*get_current_time \{"timezone":"UTC"\}\s+\| get_current_time \{\}/);
    expect(r.out).toMatch(/step 2: DIFFERENT PATH\n.*calculator \{"expression":"\(18 \* 60\).*\| answer: About 8 hours left\./);
    expect(r.out).toMatch(/step 3: same\n.*answer: It is 09:26 UTC now/);
    expect(r.out).toContain(`3 step(s) replayed; tool-call path differs in 1 (${turnId.slice(0, 8)} step 2); arguments differ in 1.`);
  });

  it('replays a whole session as JSON, with a swapped system prompt', async () => {
    const sysDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-replay-'));
    onTestFinished(() => rm(sysDir, { recursive: true, force: true }));
    const sys = path.join(sysDir, 'system.txt');
    await writeFile(sys, 'You are a terse test assistant.');
    const before = other.requests.length;
    const r = await run(['--session', sessionId, '--traces', path.join(dataDir, 'traces'), '--base-url', other.url, '--system-file', sys, '--json', '--max-steps', '2']);
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.out) as { steps: ReplayStep[] };
    expect(parsed.steps.map((s) => [s.step, s.samePath])).toEqual([[1, true], [2, false]]);
    const first = other.requests[before]?.messages[0];
    expect(first).toEqual({ role: 'system', content: await readFile(sys, 'utf8') });
  });

  it('says clearly what is wrong with the selection', async () => {
    const traces = path.join(dataDir, 'traces');
    expect(await run(['--traces', traces])).toMatchObject({ code: 2, err: expect.stringContaining('say which turn or session to replay') });
    expect(await run(['--turn', 'nope', '--traces', traces])).toMatchObject({ code: 2, err: expect.stringContaining('no turn nope in the traces') });
    expect(await run(['--session', 'nope', '--traces', traces])).toMatchObject({ code: 2, err: expect.stringContaining('no turn of session nope') });
    expect(await run(['--turn', turnId, '--traces', traces, '--system-file', '/nonexistent/x'])).toMatchObject({ code: 2, err: expect.stringContaining('cannot read it (ENOENT)') });
  });
});
