import { appendFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDashboard, TOKEN, type Served } from './dashboard-helper.js';
import { turnLines } from './trace-lines.js';

/**
 * 10,000 turns in 30 day files, the index warmed the way the bot does once it is ready, then the
 * list, a late page and a filtered list over HTTP, none of them reading the trace files again.
 * How fast they open is the benchmark's to measure, not this test's (a time asserted here fails
 * on a busy machine and proves nothing on a quiet one): `npm run bench` (section 7) times the
 * same with bigger lines and the cold first open. The times are printed for the curious.
 */

const TURNS = 10_000;
const DAYS = 30;
let dir: string;
let d: Served;
const logged: Array<{ msg: string; turns?: number }> = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-dash-10k-'));
  const traces = path.join(dir, 'traces');
  await mkdir(traces);
  const first = Date.parse('2026-01-01T00:00:00Z');
  const perDay = Math.ceil(TURNS / DAYS);
  for (let day = 0; day < DAYS; day++) {
    let text = '';
    for (let i = day * perDay; i < Math.min(TURNS, (day + 1) * perDay); i++) {
      text += turnLines(`t-${String(i).padStart(5, '0')}`, new Date(first + day * 86_400_000 + (i % perDay) * 10_000), {
        platform: i % 3 ? 'slack' : 'discord', userKey: `slack:T1:U${i % 40}`, tool: i % 4 ? 'calculator' : 'web_search', outcome: i % 20 ? 'answered' : 'max_steps', text: `question ${i} about the weather`,
      });
    }
    await appendFile(path.join(traces, `${new Date(first + day * 86_400_000).toISOString().slice(0, 10)}.jsonl`), text);
  }
  const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string }) });
  d = await serveDashboard({ tracesDir: traces, evalsDir: path.join(dir, 'evals'), log });
  await d.dashboard.warm();
}, 120_000);

afterAll(async () => {
  await d?.close();
  await rm(dir, { recursive: true, force: true });
});

async function timed(p: string): Promise<{ ms: number; body: string }> {
  const t0 = performance.now();
  const res = await d.get(p, { authorization: `Bearer ${TOKEN}` });
  const body = await res.text();
  expect(res.status, p).toBe(200);
  return { ms: performance.now() - t0, body };
}

describe('10,000 turns', () => {
  it('are indexed once, then the list, a late page and a filtered list each open from the index without re-reading the traces', async () => {
    expect(logged.find((l) => l.msg === 'dashboard: traces indexed')?.turns).toBe(TURNS);
    const read = d.dashboard.index.health().bytes;

    const list = await timed('/dashboard/turns');
    expect(list.body).toContain(`${TURNS} turns`);
    expect(list.body).toContain('page 1 of 200');
    const late = await timed('/dashboard/turns?page=200');
    expect(late.body).toContain('t-00000');
    const filtered = await timed('/dashboard/turns?platform=discord&tool=web_search&outcome=answered&text=weather');
    expect(filtered.body).toMatch(/\d+ turns of 10000/);

    expect(d.dashboard.index.health()).toMatchObject({ bytes: read, files: DAYS, rebuilds: 0 });
    process.stderr.write(`10,000 turns: list ${list.ms.toFixed(0)} ms, page 200 ${late.ms.toFixed(0)} ms, filtered ${filtered.ms.toFixed(0)} ms\n`);
  });
});
