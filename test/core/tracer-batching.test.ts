import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createTracer } from '../../src/runtime/trace/tracer.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const start = (turnId: string) => ({ type: 'turn_start' as const, turnId, sessionId: 's', platform: 'shell', userKey: 'u', text: 'hi' });

describe('tracer writes', () => {
  it('keeps every line, in order, across batches and a change of day; flush() waits for all of them', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-tracer-'));
    let now = Date.parse('2026-12-01T23:59:59.000Z');
    const tracer = createTracer({ dir, log: pino({ level: 'silent' }), redact: (v) => JSON.stringify(v), now: () => now });
    for (let i = 0; i < 50; i++) tracer.record(start(`a${i}`));
    await new Promise((r) => setImmediate(r));
    tracer.record(start('a50'));
    now += 2_000; // past midnight: the next lines belong to the next day's file
    tracer.record(start('b0'));
    tracer.record(start('b1'));
    await tracer.flush();

    const files = (await readdir(dir)).sort();
    expect(files).toEqual(['2026-12-01.jsonl', '2026-12-02.jsonl']);
    const ids = async (f: string) => (await readFile(path.join(dir!, f), 'utf8')).trim().split('\n').map((l) => (JSON.parse(l) as { turnId: string }).turnId);
    expect(await ids(files[0]!)).toEqual(Array.from({ length: 51 }, (_, i) => `a${i}`));
    expect(await ids(files[1]!)).toEqual(['b0', 'b1']);
    await tracer.close();
  });

  it("writes a turn's lines once its turn ends, not step by step; a turn that runs on is written within flushAfterMs", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-tracer-'));
    const tracer = createTracer({ dir, log: pino({ level: 'silent' }), redact: (v) => JSON.stringify(v), flushAfterMs: 200 });
    const written = async () => {
      const [file] = await readdir(dir!);
      return file ? (await readFile(path.join(dir!, file), 'utf8')).trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { type: string; turnId: string }).type) : [];
    };
    const tick = () => new Promise((r) => setImmediate(r));
    tracer.record(start('t1'));
    tracer.record({ type: 'model_call', turnId: 't1', step: 1, model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: ['x'], response: { content: null }, latencyMs: 1 });
    await tick();
    tracer.record({ type: 'tool_call', turnId: 't1', callId: 'c1', name: 'x', args: {}, ok: true, result: 'r', durationMs: 1 });
    await tick();
    // Mid-turn: nothing written yet, three steps' lines wait together.
    expect(await written()).toEqual([]);
    tracer.record({ type: 'turn_end', turnId: 't1', outcome: 'answered', steps: 1, durationMs: 3, promptTokens: 0, completionTokens: 0 });
    await tick();
    expect(await written()).toEqual(['turn_start', 'model_call', 'tool_call', 'turn_end']);

    // A long turn: its lines are on disk within flushAfterMs of the first one, without a turn end.
    tracer.record(start('t2'));
    await tick();
    expect(await written()).toHaveLength(4);
    await new Promise((r) => setTimeout(r, 400));
    expect(await written()).toHaveLength(5);
    await tracer.close();
  });

  it('writes at once when the waiting lines reach maxWaitingChars (a bounded queue)', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-tracer-'));
    const tracer = createTracer({ dir, log: pino({ level: 'silent' }), redact: (v) => JSON.stringify(v), maxWaitingChars: 1_000 });
    const big = 'x'.repeat(300); // a line of about 400 characters
    tracer.record({ ...start('t1'), text: big });
    tracer.record({ ...start('t2'), text: big });
    expect(await readdir(dir)).toEqual([]);
    tracer.record({ ...start('t3'), text: big }); // past 1,000 characters: written now, synchronously
    const [file] = await readdir(dir);
    expect((await readFile(path.join(dir, file!), 'utf8')).trim().split('\n')).toHaveLength(3);
    await tracer.close();
  });

  it('writes what was recorded right before close()', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-tracer-'));
    const tracer = createTracer({ dir, log: pino({ level: 'silent' }), redact: (v) => JSON.stringify(v) });
    tracer.record(start('last'));
    await tracer.close();
    const [file] = await readdir(dir);
    expect(await readFile(path.join(dir, file!), 'utf8')).toContain('"turnId":"last"');
  });

  it('drops lines on a failing disk with one logged error, and never throws into the turn', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-tracer-'));
    const notADir = path.join(dir, 'traces');
    await writeFile(notADir, 'a file where the trace folder should be');
    let logged = '';
    const log = pino({ level: 'error' }, new Writable({ write(chunk, _e, cb) { logged += String(chunk); cb(); } }));
    const tracer = createTracer({ dir: notADir, log, redact: (v) => JSON.stringify(v) });
    tracer.record(start('t1'));
    await tracer.flush();
    tracer.record(start('t2'));
    await tracer.close();
    expect(logged.match(/trace write failed/g)).toHaveLength(1);
  });
});
