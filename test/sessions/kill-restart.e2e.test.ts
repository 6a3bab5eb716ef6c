import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import { openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createSessionStore } from '../../src/state/sessions/session-store.js';

let dir: string;
let store: OpenedDatabase | undefined;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-kill-'));
});
afterEach(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

it('keeps a session intact when the writer is killed with SIGKILL mid-append', async () => {
  const file = path.join(dir, 'hermes.sqlite');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures/append-until-killed.ts'), file], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // Kill once enough appends have been committed to span several history pages.
  const reported = await new Promise<number>((resolve, reject) => {
    let last = 0;
    const timeout = setTimeout(() => reject(new Error(`child made no progress: ${stderr}`)), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      const lines = d.toString().trim().split('\n');
      last = Number(lines[lines.length - 1]);
      if (last >= 60) {
        clearTimeout(timeout);
        child.kill('SIGKILL');
        resolve(last);
      }
    });
    child.on('exit', () => reject(new Error(`child exited early: ${stderr}`)));
  });
  await new Promise((r) => child.once('close', r));

  store = await openSqliteDatabase(file);
  const sessions = createSessionStore(store, systemClock);
  const { id } = await sessions.current({ platform: 'shell', workspaceId: 'local', channelId: 'tty', isDm: true });
  const history = await sessions.history(id);
  const pairs = history.length / 2;
  expect(Number.isInteger(pairs)).toBe(true);
  expect(pairs).toBeGreaterThanOrEqual(reported);
  expect(history.map((m) => m.content)).toEqual(Array.from({ length: pairs }, (_, i) => [`m${i}`, `a${i}`]).flat());

  await sessions.append(id, [{ role: 'user', content: 'after restart' }]);
  const after = await sessions.history(id);
  expect(after).toHaveLength(history.length + 1);
  expect(after.at(-1)?.content).toBe('after restart');
});
