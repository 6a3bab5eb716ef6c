import { appendFile, mkdtemp, open, rm, truncate, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTraceIndex } from '../../src/operations/dashboard/trace-index.js';
import { line, turnLines } from './trace-lines.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-index-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const day = (d: string) => path.join(dir, `${d}.jsonl`);

describe('trace index', () => {
  it('summarises turns newest first: platform, user, text, tools, outcome, tokens', async () => {
    await writeFile(day('2026-11-30'), turnLines('t1', new Date('2026-11-30T10:00:00Z'), { text: 'first', tool: 'calculator' }));
    await writeFile(day('2026-12-01'), turnLines('t2', new Date('2026-12-01T09:00:00Z'), { text: 'second', platform: 'discord', userKey: 'discord:G:42', tool: 'web_search', toolOk: false, outcome: 'max_steps' }));
    const index = createTraceIndex(dir);
    await index.refresh();
    const turns = index.turns();
    expect(turns.map((t) => t.turnId)).toEqual(['t2', 't1']);
    expect(turns[0]).toMatchObject({ platform: 'discord', userKey: 'discord:G:42', text: 'second', outcome: 'max_steps', steps: 2, promptTokens: 220, completionTokens: 18, modelCalls: 2 });
    expect(turns[0]!.toolCalls).toEqual([{ name: 'web_search', ok: false, durationMs: 3, errorKind: 'execution' }]);
    expect(turns[1]!.toolCalls[0]).toMatchObject({ name: 'calculator', ok: true });
  });

  it('clips a long message for the list before the word that crosses the limit, never inside a pasted key', async () => {
    const key = 'sk-EXAMPLEnotarealkey0000000000';
    const words = 'word '.repeat(58); // 290 characters
    await writeFile(day('2026-12-01'), turnLines('t1', new Date('2026-12-01T09:00:00Z'), { text: `${words}and ${key} more` }));
    const index = createTraceIndex(dir);
    await index.refresh();
    const t = index.turn('t1')!;
    expect(t.text).toBe(`${words}and…`);
    expect(t.search).toContain(key.toLowerCase()); // the text filter still sees all of it
  });

  it('reads only the bytes appended since the last refresh', async () => {
    await writeFile(day('2026-12-01'), turnLines('t1', new Date('2026-12-01T09:00:00Z')));
    const index = createTraceIndex(dir);
    await index.refresh();
    const consumed = index.health().bytes;
    // Overwrite the already indexed bytes with same-length garbage: a reader that starts over
    // would now lose t1 and count malformed lines; an incremental one never looks back.
    const h = await open(day('2026-12-01'), 'r+');
    await h.write(Buffer.alloc(consumed - 1, 'x'), 0, consumed - 1, 0);
    await h.close();
    await appendFile(day('2026-12-01'), turnLines('t2', new Date('2026-12-01T09:05:00Z')));
    await index.refresh();
    expect(index.turns().map((t) => t.turnId)).toEqual(['t2', 't1']);
    expect(index.health().malformedLines).toBe(0);
    expect(index.health().bytes).toBeGreaterThan(consumed);
    // A new day file is picked up too.
    await writeFile(day('2026-12-02'), turnLines('t3', new Date('2026-12-02T00:00:01Z')));
    await index.refresh();
    expect(index.turns()[0]!.turnId).toBe('t3');
  });

  it('leaves a truncated last line for the next refresh and indexes it once complete', async () => {
    const whole = turnLines('t1', new Date('2026-12-01T09:00:00Z'));
    const cut = whole.length - 30; // inside the turn_end line
    await writeFile(day('2026-12-01'), whole.slice(0, cut));
    const index = createTraceIndex(dir);
    await index.refresh();
    expect(index.turn('t1')?.outcome).toBeUndefined();
    expect(index.health().malformedLines).toBe(0);
    await appendFile(day('2026-12-01'), whole.slice(cut));
    await index.refresh();
    expect(index.turn('t1')?.outcome).toBe('answered');
    expect(index.health().malformedLines).toBe(0);
  });

  it('reads a line longer than its read buffer (a tool result of several megabytes)', async () => {
    const huge = 'x'.repeat(5 * 1024 * 1024);
    await writeFile(day('2026-12-01'), turnLines('big', new Date('2026-12-01T09:00:00Z'), { result: huge }) + turnLines('after', new Date('2026-12-01T09:01:00Z')));
    const index = createTraceIndex(dir);
    await index.refresh();
    expect(index.turns().map((t) => t.turnId)).toEqual(['after', 'big']);
    const tool = (await index.readEvents('big')).find((e) => e.type === 'tool_call');
    expect(String(tool?.result).length).toBe(huge.length);
    expect(index.health().malformedLines).toBe(0);
  });

  it('skips and counts a malformed line without losing its neighbours', async () => {
    await writeFile(day('2026-12-01'), `${turnLines('t1', new Date('2026-12-01T09:00:00Z'))}{"ts":"2026-12-01T09:01:00Z","type":"tool_c\n[1,2]\n${turnLines('t2', new Date('2026-12-01T09:02:00Z'))}`);
    const index = createTraceIndex(dir);
    await index.refresh();
    expect(index.turns().map((t) => t.turnId)).toEqual(['t2', 't1']);
    expect(index.health().malformedLines).toBe(2);
    expect(index.turn('t2')?.outcome).toBe('answered');
  });

  it('reads one turn back by byte range, in order, across two day files', async () => {
    const lines = turnLines('t1', new Date('2026-11-30T23:59:59.950Z')).split('\n').filter(Boolean);
    // The turn crosses midnight: its end is in the next day's file, after another turn.
    await writeFile(day('2026-11-30'), `${lines.slice(0, 3).join('\n')}\n`);
    await writeFile(day('2026-12-01'), `${turnLines('t0', new Date('2026-12-01T00:00:00Z'))}${lines.slice(3).join('\n')}\n`);
    const index = createTraceIndex(dir);
    await index.refresh();
    const events = await index.readEvents('t1');
    expect(events.map((e) => e.type)).toEqual(['turn_start', 'model_call', 'tool_call', 'model_call', 'turn_end']);
    expect(events.every((e) => e.turnId === 't1')).toBe(true);
    expect(index.turn('t1')?.outcome).toBe('answered');
  });

  it('starts over when a file shrinks or disappears (pruned or replaced)', async () => {
    await writeFile(day('2026-11-30'), turnLines('old', new Date('2026-11-30T09:00:00Z')));
    await writeFile(day('2026-12-01'), turnLines('t1', new Date('2026-12-01T09:00:00Z')) + turnLines('t2', new Date('2026-12-01T09:01:00Z')));
    const index = createTraceIndex(dir);
    await index.refresh();
    expect(index.turns()).toHaveLength(3);
    await unlink(day('2026-11-30'));
    await index.refresh();
    expect(index.turns().map((t) => t.turnId)).toEqual(['t2', 't1']);
    await truncate(day('2026-12-01'), turnLines('t1', new Date('2026-12-01T09:00:00Z')).length);
    await index.refresh();
    expect(index.turns().map((t) => t.turnId)).toEqual(['t1']);
    expect(index.health().rebuilds).toBe(2);
  });

  it('counts refusals without a turn and ignores files that are not day files', async () => {
    await writeFile(day('2026-12-01'), line('2026-12-01T09:00:00.000Z', { type: 'refusal', reason: 'rate', source: 'message', platform: 'slack', userKey: 'slack:T1:U9' }));
    await writeFile(path.join(dir, 'notes.jsonl'), 'not a trace\n');
    const index = createTraceIndex(dir);
    await index.refresh();
    expect(index.refusals()).toEqual([{ at: Date.parse('2026-12-01T09:00:00Z'), reason: 'rate', platform: 'slack' }]);
    expect(index.turns()).toHaveLength(0);
    expect(index.health()).toMatchObject({ files: 1, malformedLines: 0 });
  });

  it('has no turns and no error when the traces folder does not exist yet', async () => {
    const index = createTraceIndex(path.join(dir, 'missing'));
    await index.refresh();
    expect(index.turns()).toEqual([]);
  });
});
