import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWorkspace } from '../../src/capabilities/workspace/workspace.js';
import { writeFileTool } from '../../tools/files.js';
import { makeToolContext } from '../tools/context-helper.js';
import { traversableTempDir } from '../sandbox/sandbox-helper.js';

/**
 * The attack at full size: the usage scan used to stop at 20,000 entries and sum only those, so
 * 20,001 empty files named to sort first hid megabytes behind them. Writing 20,001 files takes
 * seconds, so this runs with the e2e suite; quota-count.test.ts checks the same at a tenth of it.
 */

const MB = 1024 * 1024;
let dir: string;
beforeEach(async () => {
  dir = await traversableTempDir('hermes-quota-');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('workspace quota counts every file (full-size attack)', () => {
  it('20,001 empty files cannot hide 2.7 MB from a 1 MB quota', async () => {
    const ws = openWorkspace(path.join(dir, 'ws'), { quotaBytes: 1 * MB, maxFileBytes: 1 * MB, maxEntries: 30_000 });
    await ws.ensure();
    await mkdir(ws.root, { recursive: true });
    for (let i = 0; i < 20_001; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, 20_001 - i) }, (_, j) => writeFile(path.join(ws.root, `a${String(i + j).padStart(6, '0')}`), '')));
    }
    await writeFile(path.join(ws.root, 'zzz-hidden.bin'), Buffer.alloc(Math.round(2.7 * MB)));
    expect(await ws.usage()).toEqual({ bytes: Math.round(2.7 * MB), entries: 20_002, complete: true });
    const ctx = makeToolContext({ workspace: ws });
    await expect(writeFileTool.run({ path: 'more.txt', content: 'x' }, ctx)).rejects.toThrow(/over its quota of 1\.0 MB \(2\.7 MB used\)/);
  }, 60_000);
});
