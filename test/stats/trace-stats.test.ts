import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatStats, readTraceStats, summarise, TracesUnreadableError } from '../../src/operations/stats/trace-stats.js';
import { NOW, writeTraceFixtures } from './trace-fixtures.js';

describe('trace stats (the numbers behind /hermes status and npm run stats)', () => {
  it('summarises events without any turn as an empty window', () => {
    const s = summarise([]);
    expect(s).toMatchObject({ turns: 0, steps: { mean: 0, max: 0 }, tokens: { promptPerTurn: 0 } });
    expect(formatStats(s)).toEqual(['No turns in this window.']);
  });

  it('computes percentiles per tool and counts failed tools by error kind', () => {
    const calls = [10, 20, 30, 40, 1000].map((d, i) => ({ type: 'tool_call', turnId: 't', name: 'fetch_url', ok: i !== 4, durationMs: d, errorKind: i === 4 ? 'timeout' : undefined }));
    const s = summarise([...calls, { type: 'turn_end', turnId: 't', outcome: 'answered', steps: 4, promptTokens: 10, completionTokens: 1 }]);
    expect(s.tools.fetch_url).toEqual({ calls: 5, ok: 4, successRate: 0.8, p50Ms: 30, p95Ms: 1000 });
    expect(s.errors).toEqual({ 'tool:timeout': 1 });
  });

  it('reads only the day files and lines inside the window, skipping torn lines', async () => {
    const dir = await writeTraceFixtures();
    const s = await readTraceStats(dir, { since: NOW - 86_400_000, until: NOW });
    expect(s.turns).toBe(3);
    expect(s.modelCalls).toEqual({ count: 6, errors: 1, p50Ms: 400, p95Ms: 60000 });
    const compact = formatStats(s, { compact: true });
    expect(compact[0]).toBe('Turns: 3 (answered 2, model_error:timeout 1)');
    expect(await readTraceStats(`${dir}/missing`, { since: 0, until: NOW })).toMatchObject({ turns: 0 });
    await rm(dir, { recursive: true, force: true });
  });

  it('reads only a missing folder as "no traces"; any other error is reported, never zeros', async () => {
    const dir = await writeTraceFixtures();
    // Root reads through chmod 000, so other errors stand in for EACCES: a file where the folder
    // should be, and a folder where a day file should be.
    const notAFolder = path.join(dir, '2026-03-14.jsonl');
    await expect(readTraceStats(notAFolder, { since: 0, until: NOW })).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(readTraceStats(notAFolder, { since: 0, until: NOW })).rejects.toBeInstanceOf(TracesUnreadableError);
    const broken = path.join(dir, 'broken');
    await mkdir(path.join(broken, '2026-03-14.jsonl'), { recursive: true });
    await writeFile(path.join(broken, '2026-03-13.jsonl'), '');
    await expect(readTraceStats(broken, { since: 0, until: NOW })).rejects.toMatchObject({ code: 'EISDIR', message: expect.stringContaining(broken) });
    await rm(dir, { recursive: true, force: true });
  });
});
