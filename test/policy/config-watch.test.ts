import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchConfigFile } from '../../src/settings/config-watch.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The config file watch: a change is reported once the file has stopped changing, not half-way through a write.
 *
 * The checks hold on a loaded machine too. The writer's pauses are timers, which a busy machine
 * stretches: one stretched past the settle time is a quiet file, rightly reported then. So the test
 * times each write and each report and checks what the watch promises against what happened: no
 * report sooner than `settleMs` after a write began, each with the whole file as it then was, the
 * last with the last write, and exactly one when every pause fell clearly short of the settle time
 * (as on a quiet machine).
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-watch-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('watchConfigFile', () => {
  it('reports a write once, after the file settled, with its whole content', async () => {
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, 'v: 1\n');
    const settleMs = 150;
    const reports: Array<{ at: number; text: string }> = [];
    const stop = watchConfigFile(file, { intervalMs: 20, settleMs, onChange: () => reports.push({ at: Date.now(), text: readFileSync(file, 'utf8') }) });
    const writes: Array<{ started: number; done: number; text: string }> = [];
    const parts = ['v: 2\n', 'v: 2\nw: 1\n', 'v: 2\nw: 1\nx: 1\n'];
    const last = parts.at(-1)!;
    try {
      // A slow writer: three writes 40 ms apart (each one moves the modification time), then quiet.
      for (const text of parts) {
        const started = Date.now();
        await writeFile(file, text);
        writes.push({ started, done: Date.now(), text });
        await new Promise((r) => setTimeout(r, 40));
      }
      await waitFor('the report of the last write', () => reports.some((r) => r.text === last), { timeoutMs: 5_000, everyMs: 10 });
      for (const r of reports) {
        // The write it follows (the last begun before it): the watch saw that change no sooner than
        // the write began, and waited the settle time after.
        const after = writes.filter((w) => w.started <= r.at).at(-1);
        if (!after) throw new Error(`a report before any write: ${JSON.stringify(r)}`);
        expect(r.at - after.started).toBeGreaterThanOrEqual(settleMs);
        // The whole file as that write left it, never a write caught half-way. (A report while
        // the next write was under way, after a stretched pause, cannot say which it saw.)
        if (after.done <= r.at) expect(r.text).toBe(after.text);
      }
      expect(reports.at(-1)!.text).toBe(last);
      // Pauses between the writes as the writer's own event loop ran them (a starved loop shows here).
      // Clearly short of the settle time (two polls to spare): one report, at the end.
      const longest = Math.max(...writes.slice(1).map((w, i) => w.started - writes[i]!.started));
      if (longest < settleMs - 2 * 20) expect(reports).toHaveLength(1);
      else expect(reports.length).toBeLessThanOrEqual(writes.length);
    } finally {
      stop();
    }
  });

  it('says nothing after it was stopped', async () => {
    const file = path.join(dir, 'b.yaml');
    await writeFile(file, 'v: 1\n');
    let calls = 0;
    const stop = watchConfigFile(file, { intervalMs: 20, settleMs: 20, onChange: () => calls++ });
    await writeFile(file, 'v: 2\n');
    // At least once: a write's truncation and its data may be seen apart when the machine is busy.
    await waitFor('the change', () => calls > 0, { timeoutMs: 5_000, everyMs: 10 });
    stop();
    const atStop = calls;
    await writeFile(file, 'v: 3\n');
    // Long enough for several polls and the settle time had the watch still been on.
    await new Promise((r) => setTimeout(r, 200));
    expect(calls).toBe(atStop);
  });
});
