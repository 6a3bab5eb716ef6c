import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('uncaught exception', () => {
  it('logs it, flushes the traces and exits non-zero instead of running on', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-crash-'));
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/crash/crash-child.ts'), dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`still running after 15 s: ${out}`)); }, 15_000);
      child.on('exit', (c) => { clearTimeout(timer); resolve(c); });
    });
    expect(code).toBe(1);
    const fatal = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; err?: string }).find((l) => l.level === 60);
    expect(fatal?.msg).toMatch(/uncaught exception/);
    expect(fatal?.err).toBe('boom from a timer');
    expect(out).not.toMatch(/still running/);
    const files = await readdir(dir);
    const traces = (await Promise.all(files.map((f) => readFile(path.join(dir!, f), 'utf8')))).join('');
    expect(traces).toContain('before-the-crash');
  });
});
