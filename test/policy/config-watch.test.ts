import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchConfigFile } from '../../src/settings/config-watch.js';
import { waitFor } from '../helpers/wait-for.js';

/** The config file watch: a change is reported once the file has stopped changing, not half-way through a write. */

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
    const seen: string[] = [];
    const { readFile } = await import('node:fs/promises');
    const stop = watchConfigFile(file, { intervalMs: 20, settleMs: 150, onChange: () => void readFile(file, 'utf8').then((t) => seen.push(t)) });
    try {
      // A slow writer: three writes 40 ms apart (each one moves the modification time), then quiet.
      for (const part of ['v: 2\n', 'v: 2\nw: 1\n', 'v: 2\nw: 1\nx: 1\n']) {
        await writeFile(file, part);
        await new Promise((r) => setTimeout(r, 40));
      }
      await waitFor('the change', () => seen.length > 0, { timeoutMs: 5_000, everyMs: 10 });
      expect(seen).toEqual(['v: 2\nw: 1\nx: 1\n']);
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
    await waitFor('the change', () => calls === 1, { timeoutMs: 5_000, everyMs: 10 });
    stop();
    await writeFile(file, 'v: 3\n');
    // Long enough for several polls and the settle time had the watch still been on.
    await new Promise((r) => setTimeout(r, 200));
    expect(calls).toBe(1);
  });
});
