import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/operations/eval/eval-cli.js';
import type { SuiteResult } from '../../src/operations/eval/run-suite.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { builtinTools } from '../../tools/index.js';
import { createCore } from '../../src/app/app.js';

let dir: string;
let fake: FakeOpenAI;
/** The scripted run both the table test and the --compare test read (each test stands alone). */
let scripted: { code: number; out: string; err: string; file: string };

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-eval-cli-'));
  // A "real" model that never calls a tool: a measurement with failures, not a harness error.
  fake = await startFakeOpenAI({ handler: () => ({ text: 'I think it is about noon.' }) });
  const file = path.join(dir, 'a.json');
  scripted = { ...(await run(['--scripted', '--case', 'what-time-is-it,time-in-tokyo', '--out', file])), file };
});
afterAll(async () => {
  await fake?.close();
  await rm(dir, { recursive: true, force: true });
});

async function run(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env, cwd: process.cwd() }, { tools: builtinTools, createCore });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('npm run eval', () => {
  it('runs filtered cases with the scripted model, prints a table and writes JSON', async () => {
    const r = scripted;
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/what-time-is-it\s+pass\s+2\s+1\.00/);
    expect(r.out).toContain('Overall: 2/2 passed (100.0%)');
    const saved = JSON.parse(await readFile(r.file, 'utf8')) as SuiteResult;
    expect(saved.scripted).toBe(true);
    expect(saved.cases.map((c) => c.name)).toEqual(['what-time-is-it', 'time-in-tokyo']);
    expect(saved.summary).toMatchObject({ cases: 2, passed: 2, successRate: 1, meanSteps: 2, meanToolAccuracy: 1 });
  });

  it('measures a model that fails the cases and still exits 0; --compare shows what broke', async () => {
    const b = path.join(dir, 'b.json');
    const r = await run(['--case', 'what-time-is-it', '--case', 'time-in-tokyo', '--out', b], { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'k', HERMES_MODEL: 'other-model', HERMES_MODEL_RETRIES: '0' });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/what-time-is-it\s+FAIL/);
    expect(r.out).toContain('✗ no_realtime_claim_without_tool: answer states "noon" but no tool call succeeded');
    const saved = JSON.parse(await readFile(b, 'utf8')) as SuiteResult;
    expect(saved.model).toBe('other-model');
    expect(saved.summary.passed).toBe(0);

    const c = await run(['--compare', scripted.file, b]);
    expect(c.code).toBe(0);
    expect(c.out).toMatch(/what-time-is-it\s+pass\s+FAIL\s+broken\s+2→1/);
    expect(c.out).toContain('Changed: 0 fixed, 2 broken');
    expect(c.out).toContain('Success rate: 100.0% → 0.0% (-100.0 pts)');
    expect(c.out).toContain('Steps per case: 2.00 → 1.00 (-1.00)');
  });

  it('exits non-zero only for harness problems, with a clear line', async () => {
    expect(await run(['--compare', 'only-one.json'])).toMatchObject({ code: 2, err: expect.stringContaining('needs two result files') });
    const junk = path.join(dir, 'junk.json');
    await writeFile(junk, '{"version":1}');
    expect(await run(['--compare', junk, junk])).toMatchObject({ code: 2, err: expect.stringMatching(/junk\.json: not an eval result file: startedAt/) });
    expect(await run(['--cases', path.join(dir, 'nope')])).toMatchObject({ code: 2, err: expect.stringContaining('cannot read the case folder') });
    expect(await run(['--tag', 'no-such-tag'])).toMatchObject({ code: 2, err: 'No case matches the filters (--case / --tag).' });
    expect(await run(['--bogus'])).toMatchObject({ code: 2 });
    expect(await run(['--case', 'what-time-is-it', '--out', path.join(dir, 'x.json')], { HERMES_MAX_STEPS: 'lots' })).toMatchObject({
      code: 1,
      err: expect.stringContaining('HERMES_MAX_STEPS="lots" is not valid'),
    });
    const bad = path.join(dir, 'bad-cases');
    await mkdir(bad);
    await writeFile(path.join(bad, 'x.yaml'), 'name: x\nmessages: []\nexpect: {}\n');
    const r = await run(['--cases', bad]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/Case files have problems:\n {2}.*x\.yaml: case "x": messages:/);
  });
});
