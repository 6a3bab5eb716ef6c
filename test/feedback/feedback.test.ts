import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main as evalMain } from '../../src/operations/eval/eval-cli.js';
import { loadCases } from '../../src/operations/eval/case-schema.js';
import { main as statsMain } from '../../src/operations/stats/stats-cli.js';
import { openSqliteDatabase } from '../../src/state/store/database.js';
import { createFeedbackStore, type FeedbackStore } from '../../src/state/feedback/feedback-store.js';
import { createCore } from '../../src/app/app.js';
import { builtinTools } from '../../tools/index.js';
import { serveDashboard } from '../dashboard/dashboard-helper.js';
import { line, turnLines } from '../dashboard/trace-lines.js';

/**
 * Votes on answers, read back everywhere they are shown: the store (real SQLite on disk), `npm run
 * stats`, the dashboard's turn and stats pages, and `npm run eval -- --from-feedback`.
 */
const DAY = 86_400_000;
const NOW = Date.parse('2026-03-14T12:00:00Z');
let dir: string;
let store: FeedbackStore;
let close: () => Promise<void>;

const vote = (turnId: string, voter: string, v: 'up' | 'down', at: number) => store.vote({ turnId, voter, vote: v, platform: 'slack', conversation: 'slack:T1:C1:-', votedAt: at });

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-feedback-'));
  const db = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  store = createFeedbackStore(db.db);
  close = () => db.close();
  await mkdir(path.join(dir, 'traces'));
  const answered = (id: string, at: number, text: string, answer: string) =>
    line(new Date(at).toISOString(), { type: 'turn_start', turnId: id, sessionId: `s-${id}`, platform: 'slack', userKey: 'slack:T1:U1', text }) +
    line(new Date(at + 10).toISOString(), { type: 'model_call', turnId: id, step: 1, model: 'm', messages: [], tools: [], response: { content: answer, toolCalls: [], parseErrors: [] }, latencyMs: 5 }) +
    line(new Date(at + 20).toISOString(), { type: 'turn_end', turnId: id, outcome: 'answered', steps: 1, durationMs: 20, promptTokens: 1, completionTokens: 1 });
  await writeFile(
    path.join(dir, 'traces', '2026-03-14.jsonl'),
    answered('turn-aaaa-1111', NOW - 3_600_000, 'What is the capital of Australia?', 'The capital of Australia is Sydney.\nIt is the largest city.') +
      answered('turn-bbbb-2222', NOW - 3_000_000, 'Say hi', 'Hi!') +
      turnLines('turn-cccc-3333', new Date(NOW - 2_000_000)),
  );
});
afterEach(async () => {
  await close();
  await rm(dir, { recursive: true, force: true });
});

describe('feedback store', () => {
  it('keeps one vote per turn and voter: a second click replaces the first, a repeat changes nothing', async () => {
    expect(await vote('turn-aaaa-1111', 'slack:T1:U2', 'up', NOW - 1000)).toBe('recorded');
    expect(await vote('turn-aaaa-1111', 'slack:T1:U2', 'down', NOW - 900)).toBe('changed');
    expect(await vote('turn-aaaa-1111', 'slack:T1:U2', 'down', NOW - 800)).toBe('same');
    expect(await vote('turn-aaaa-1111', 'slack:T1:U3', 'down', NOW - 700)).toBe('recorded');
    expect((await store.votesFor('turn-aaaa-1111')).map((v) => [v.voter, v.vote])).toEqual([['slack:T1:U2', 'down'], ['slack:T1:U3', 'down']]);
    await vote('turn-bbbb-2222', 'slack:T1:U2', 'up', NOW - 600);
    await vote('turn-old', 'slack:T1:U2', 'down', NOW - 40 * DAY);
    expect(await store.summary({ since: NOW - DAY, until: NOW })).toEqual({ up: 1, down: 2, turns: 2 });
    expect((await store.downVoted({ since: NOW - DAY, until: NOW }, 10)).map((t) => t.turnId)).toEqual(['turn-aaaa-1111']);
  });
});

describe('votes in npm run stats', () => {
  async function stats(argv: string[], env: Record<string, string>) {
    const out: string[] = [];
    const code = await statsMain(argv, { out: (l) => out.push(l), err: () => undefined, env, cwd: dir, now: () => NOW });
    return { code, out };
  }

  it('prints the votes of the window and gives them in --json', async () => {
    await vote('turn-aaaa-1111', 'slack:T1:U2', 'down', NOW - 1000);
    await vote('turn-bbbb-2222', 'slack:T1:U2', 'up', NOW - 900);
    await vote('turn-bbbb-2222', 'slack:T1:U3', 'up', NOW - 800);
    await vote('turn-old', 'slack:T1:U3', 'down', NOW - 3 * DAY);
    const text = await stats([], { HERMES_DATA_DIR: dir });
    expect(text.code).toBe(0);
    expect(text.out).toContain('Feedback: 2 up, 1 down (67% up) on 2 answers');
    const json = JSON.parse((await stats(['--json', '--since', '7d'], { HERMES_DATA_DIR: dir })).out.join('\n')) as { feedback: unknown };
    expect(json.feedback).toMatchObject({ up: 2, down: 2, turns: 3 });
  });

  it('says so when there is no database yet', async () => {
    const empty = await mkdtemp(path.join(os.tmpdir(), 'hermes-feedback-none-'));
    try {
      const r = await stats([], { HERMES_DATA_DIR: empty });
      expect(r.code).toBe(0);
      expect(r.out).toContain('Feedback: no database with votes yet');
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});

describe('votes on the dashboard', () => {
  it('the turn page lists who voted how; the stats page counts the window; an unreadable store is said, not hidden', async () => {
    await vote('turn-cccc-3333', 'slack:T1:U2', 'down', NOW - 1000);
    await vote('turn-cccc-3333', 'slack:T1:U3', 'up', NOW - 900);
    const d = await serveDashboard({ tracesDir: path.join(dir, 'traces'), evalsDir: path.join(dir, 'evals'), feedback: store, now: () => NOW });
    try {
      const cookie = await d.signIn();
      const turn = await (await d.get('/dashboard/turns/turn-cccc-3333', { cookie })).text();
      expect(turn).toContain('Feedback: 1 👍 · 1 👎');
      expect(turn).toMatch(/slack:T1:U2<\/td><td>👎 down/);
      const other = await (await d.get('/dashboard/turns/turn-bbbb-2222', { cookie })).text();
      expect(other).toContain('Feedback: no votes.');
      const page = await (await d.get('/dashboard/stats?days=7', { cookie })).text();
      expect(page).toMatch(/<table id="feedback-stats">[\s\S]*👍 up<\/td><td class="num">1<[\s\S]*👎 down<\/td><td class="num">1</);
    } finally {
      await d.close();
    }
    const failing = { ...store, votesFor: () => Promise.reject(new Error('disk gone')), summary: () => Promise.reject(new Error('disk gone')) };
    const broken = await serveDashboard({ tracesDir: path.join(dir, 'traces'), evalsDir: path.join(dir, 'evals'), feedback: failing, now: () => NOW, log: pino({ level: 'silent' }) });
    try {
      const cookie = await broken.signIn();
      expect(await (await broken.get('/dashboard/turns/turn-cccc-3333', { cookie })).text()).toContain('the votes could not be read');
      expect(await (await broken.get('/dashboard/stats', { cookie })).text()).toContain('The votes could not be read.');
    } finally {
      await broken.close();
    }
  });
});

describe('npm run eval -- --from-feedback', () => {
  async function evalRun(argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await evalMain(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: { HERMES_DATA_DIR: dir }, cwd: dir, now: () => NOW }, { tools: builtinTools, createCore });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('turns down-voted answers into cases the eval runner loads, keeps edited cases on a rerun, and reports turns without a trace', async () => {
    await vote('turn-aaaa-1111', 'slack:T1:U2', 'down', NOW - 1000);
    await vote('turn-bbbb-2222', 'slack:T1:U2', 'up', NOW - 900);
    await vote('turn-gone-9999', 'slack:T1:U2', 'down', NOW - 800);
    const first = await evalRun(['--from-feedback', '--since', '7d']);
    expect(first.code).toBe(0);
    expect(first.out).toContain('Added 1 case to evals/from-feedback.yaml: feedback-turnaaaa1111');
    expect(first.err).toContain('turn-gone-9999');
    const cases = await loadCases(path.join(dir, 'evals'));
    expect(cases).toHaveLength(1);
    expect(cases[0]).toMatchObject({
      name: 'feedback-turnaaaa1111',
      tags: ['from-feedback'],
      messages: ['What is the capital of Australia?'],
      expect: { answer: { none: ['The capital of Australia is Sydney.'] } },
    });
    expect(cases[0]!.description).toContain('voted down by slack:T1:U2');

    // A reviewer's edit survives the next export.
    const file = path.join(dir, 'evals', 'from-feedback.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('- The capital of Australia is Sydney.', '- Sydney\n      all:\n        - Canberra'));
    await vote('turn-bbbb-2222', 'slack:T1:U3', 'down', NOW - 500);
    const second = await evalRun(['--from-feedback', '--since', '7d']);
    expect(second.out).toContain('Added 1 case to evals/from-feedback.yaml: feedback-turnbbbb2222');
    const again = await loadCases(path.join(dir, 'evals'));
    expect(again.map((c) => c.name)).toEqual(['feedback-turnaaaa1111', 'feedback-turnbbbb2222']);
    expect(again[0]!.expect.answer).toEqual({ none: ['Sydney'], all: ['Canberra'] });
    expect((await evalRun(['--from-feedback', '--since', '7d'])).out).toContain('is unchanged');
  });
});
