import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWorkspace, type SessionWorkspace } from '../../src/capabilities/workspace/workspace.js';
import { listFilesTool, readFileTool, sendFileTool, writeFileTool } from '../../tools/files.js';
import { makeToolContext } from '../tools/context-helper.js';
import { traversableTempDir } from '../sandbox/sandbox-helper.js';

/**
 * The attack: code in the sandbox makes a named pipe (mkfifo) in the workspace and asks read_file
 * for it. A blocking open of a FIFO waits for a writer that never comes, on one of libuv's four
 * threads; four such reads took them all, and every file read and DNS lookup of every user stopped.
 * Every file tool must refuse anything that is not a regular file (or a folder, for listings)
 * without opening it in a way that can wait.
 */

let dir: string;
let ws: SessionWorkspace;
const fifos: string[] = [];

beforeEach(async () => {
  dir = await traversableTempDir('hermes-fifo-');
  ws = openWorkspace(path.join(dir, 'ws'), { quotaBytes: 100_000, maxFileBytes: 50_000 });
  await ws.ensure();
});

afterEach(async () => {
  // Should a read still be stuck in open() (the bug), a writer arriving releases its thread.
  for (const f of fifos.splice(0)) {
    try {
      closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // nobody was waiting on it
    }
  }
  await rm(dir, { recursive: true, force: true });
});

function mkfifo(rel: string): string {
  const abs = path.join(ws.root, rel);
  execFileSync('mkfifo', [abs]);
  fifos.push(abs);
  return abs;
}

describe('named pipes and other special files in the workspace', () => {
  it('read_file refuses a FIFO at once, four times over, and a normal read still completes after', async () => {
    mkfifo('pipe');
    await writeFile(path.join(ws.root, 'plain.txt'), 'still answering');
    const ctx = makeToolContext({ workspace: ws });
    const refusals = await Promise.allSettled([1, 2, 3, 4].map(() => readFileTool.run({ path: 'pipe' }, ctx)));
    for (const r of refusals) {
      expect(r.status).toBe('rejected');
      expect(String((r as PromiseRejectedResult).reason.message)).toMatch(/"pipe" is a named pipe, not a regular file/);
    }
    expect(String(await readFileTool.run({ path: 'plain.txt' }, ctx))).toContain('still answering');
  }, 10_000);

  it('send_file and write_file refuse a FIFO; list_files shows it without opening it', async () => {
    mkfifo('out.txt');
    const sent: string[] = [];
    const ctx = makeToolContext({ workspace: ws, sendFile: async (f) => void sent.push(f.name) });
    await expect(sendFileTool.run({ path: 'out.txt' }, ctx)).rejects.toThrow(/named pipe, not a regular file/);
    await expect(writeFileTool.run({ path: 'out.txt', content: 'x'.repeat(50_000) }, ctx)).rejects.toThrow(/named pipe, not a regular file/);
    expect(sent).toEqual([]);
    expect(String(await listFilesTool.run({}, ctx))).toContain('out.txt (special file)');
  }, 10_000);

  it('an attachment is never written into a FIFO that sits at its name', async () => {
    mkfifo('incoming.bin');
    await expect(ws.writeStream('incoming.bin', (async function* () {
      yield Buffer.alloc(40_000, 1);
      yield Buffer.alloc(40_000, 2);
    })(), 50_000)).rejects.toThrow(/named pipe, not a regular file/);
  }, 10_000);
});
