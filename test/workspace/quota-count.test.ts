import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWorkspace, WORKSPACE_MAX_ENTRIES, type SessionWorkspace } from '../../src/capabilities/workspace/workspace.js';
import { listFilesTool, writeFileTool } from '../../tools/files.js';
import { makeToolContext } from '../tools/context-helper.js';
import { traversableTempDir } from '../sandbox/sandbox-helper.js';

/**
 * The attack: the usage scan stopped at 20,000 entries and summed only those, so 20,001 empty files
 * named to sort first hid megabytes behind them, and the quota never saw them. Usage is now counted
 * exactly, and the number of files and folders is capped too, so the count is always complete.
 */

const MB = 1024 * 1024;
let dir: string;
beforeEach(async () => {
  dir = await traversableTempDir('hermes-quota-');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function fill(ws: SessionWorkspace, empties: number, folder = ''): Promise<void> {
  await mkdir(path.join(ws.root, folder), { recursive: true });
  for (let i = 0; i < empties; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, empties - i) }, (_, j) => writeFile(path.join(ws.root, folder, `a${String(i + j).padStart(6, '0')}`), '')));
  }
}

describe('workspace quota counts every file', () => {
  // The full-size attack (20,001 files, past the old fixed scan bound) runs in quota-count.e2e.test.ts:
  // writing that many files takes seconds. Here the same property at a tenth of the size.
  it('2,001 empty files named to sort first cannot hide 2.7 MB from a 1 MB quota', async () => {
    const ws = openWorkspace(path.join(dir, 'ws'), { quotaBytes: 1 * MB, maxFileBytes: 1 * MB, maxEntries: 3_000 });
    await ws.ensure();
    await fill(ws, 2_001);
    await writeFile(path.join(ws.root, 'zzz-hidden.bin'), Buffer.alloc(Math.round(2.7 * MB)));
    expect(await ws.usage()).toEqual({ bytes: Math.round(2.7 * MB), entries: 2_002, complete: true });
    const ctx = makeToolContext({ workspace: ws });
    await expect(writeFileTool.run({ path: 'more.txt', content: 'x' }, ctx)).rejects.toThrow(/over its quota of 1\.0 MB \(2\.7 MB used\)/);
  });

  it('caps the number of files and folders: one past the cap is refused, and a scan never goes further than that', async () => {
    const ws = openWorkspace(path.join(dir, 'ws'), { quotaBytes: 1 * MB, maxFileBytes: 1 * MB, maxEntries: 100 });
    await ws.ensure();
    await fill(ws, 99, 'data'); // 99 files + the folder: exactly at the cap
    const ctx = makeToolContext({ workspace: ws });
    await expect(writeFileTool.run({ path: 'data/a000000', content: 'replacing is fine' }, ctx)).resolves.toMatch(/^Replaced/);
    await expect(writeFileTool.run({ path: 'one-more.txt', content: 'x' }, ctx)).rejects.toThrow(/would take the workspace over its limit of 100 files and folders/);
    await fill(ws, 150, 'more'); // as code in the sandbox could
    expect(await ws.usage()).toMatchObject({ entries: 101, complete: false });
    expect(String(await listFilesTool.run({}, ctx))).toContain('more than 100 files and folders (the limit is 100)');
  }, 30_000);

  it('has a documented default cap', () => {
    expect(WORKSPACE_MAX_ENTRIES).toBe(10_000);
  });
});
