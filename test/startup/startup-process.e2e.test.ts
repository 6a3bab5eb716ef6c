import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFileValues, ignoredEnvLines } from '../../src/basics/env-file.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';

/**
 * Start-up as an operator meets it: the real entry point spawned from a folder of its own (so its
 * `.env` is the one read), against the fake model. `.env` loading, data-folder errors, and the
 * container case where nobody can ever type.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const MAIN = path.join(ROOT, 'src/main.ts');

let fake: FakeOpenAI;
const dirs: string[] = [];
beforeAll(async () => {
  fake = await startFakeOpenAI({ models: ['from-dotenv', 'gpt-4o-mini'] });
});
afterAll(async () => {
  await fake.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'hermes-start-'));
  dirs.push(d);
  return d;
}

/** The `msg` of each JSON log line on stderr. */
function logMessages(stderr: string): string[] {
  return stderr.split('\n').flatMap((l) => {
    try {
      return [String((JSON.parse(l) as { msg?: unknown }).msg)];
    } catch {
      return [];
    }
  });
}

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs main in `cwd`. `input`: lines to pipe (stdin then closed), or 'closed' for no input at all. */
function run(cwd: string, env: Record<string, string>, input: string[] | 'closed', args: string[] = [], endWhenStderr?: RegExp): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [MAIN, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), LOG_LEVEL: 'warn', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (endWhenStderr?.test(stderr)) child.stdin.end();
    });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`timed out; stdout:\n${stdout}\nstderr:\n${stderr}`)); }, 60_000);
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    if (input === 'closed') child.stdin.end();
    else {
      child.stdin.write(input.map((l) => `${l}\n`).join(''));
      if (!endWhenStderr) child.stdin.end();
    }
  });
}

describe('.env', () => {
  it('fills only what the environment leaves unset or empty', () => {
    const text = 'A=from-file\nB=from-file\nC=from-file\nD=\n# E=commented\n';
    expect(envFileValues({ A: 'from-env', B: '', C: undefined, D: undefined }, text)).toEqual({ B: 'from-file', C: 'from-file' });
  });

  it('is read from the folder the bot starts in; the environment wins; an empty value counts as unset', async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, '.env'), [
      `OPENAI_BASE_URL=${fake.url}`,
      'HERMES_MODEL=from-dotenv',
      'HERMES_TIMEZONE=Asia/Tokyo',
      'HERMES_DATA_DIR=./dotenv-data',
      'HERMES_MODEL_RETRIES=0',
    ].join('\n'));
    const before = fake.requests.length;
    const r = await run(cwd, { HERMES_TIMEZONE: 'Europe/Berlin', HERMES_DATA_DIR: '' }, ['hello from dotenv'], ['--chat']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('hermes> ok');
    const req = fake.requests.slice(before).find((q) => JSON.stringify(q.messages).includes('hello from dotenv'))!;
    expect(req.model).toBe('from-dotenv');
    expect(JSON.stringify(req.messages)).toContain('default time zone is Europe/Berlin');
    expect(existsSync(path.join(cwd, 'dotenv-data', 'hermes.sqlite'))).toBe(true);
  }, 90_000);
});

describe('.env lines that set nothing, and names the bot does not read', () => {
  it('a name without "=" sets nothing and does not swallow the next line', () => {
    const text = 'OPENAI_API_KEY\nHERMES_MODEL=from-dotenv\nB="two\nlines"\n# note\n\nexport C=1\n';
    expect(envFileValues({}, text)).toEqual({ HERMES_MODEL: 'from-dotenv', B: 'two\nlines', C: '1' });
    expect(ignoredEnvLines(text)).toEqual([1]);
  });

  it('at start, names the line that set nothing and a misspelt HERMES_ name with the closest known one', async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, '.env'), ['OPENAI_API_KEY', 'HERMES_MODEL=from-dotenv', `OPENAI_BASE_URL=${fake.url}`, 'HERMES_MAX_STEP=3', 'HERMES_MODEL_RETRIES=0'].join('\n'));
    const before = fake.requests.length;
    const r = await run(cwd, { HERMES_WORSPACE_MB: '5' }, ['hello'], ['--chat']);
    expect(r.code, r.stderr).toBe(0);
    expect(fake.requests.slice(before).some((q) => q.model === 'from-dotenv')).toBe(true);
    const warnings = logMessages(r.stderr).join('\n');
    expect(warnings).toContain(`${path.join(cwd, '.env')}: line 1 sets nothing (no "=")`);
    expect(warnings).toContain('HERMES_MAX_STEP is set but hermes does not read it: did you mean HERMES_MAX_STEPS?');
    expect(warnings).toContain('HERMES_WORSPACE_MB is set but hermes does not read it: did you mean HERMES_WORKSPACE_MB?');
  }, 90_000);
});

describe('data folder and nothing to talk to', () => {
  it('a data folder that cannot be created names HERMES_DATA_DIR and exits 2', async () => {
    const cwd = await tempDir();
    const file = path.join(cwd, 'not-a-folder');
    await writeFile(file, 'x');
    const r = await run(cwd, { OPENAI_BASE_URL: fake.url, HERMES_DATA_DIR: file }, ['hi'], ['--chat']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^config error: HERMES_DATA_DIR=.*not-a-folder cannot be used \(a file is in the way of the folder, E\w+\): point HERMES_DATA_DIR at a folder/);
  }, 90_000);

  it('no platform, no terminal and stdin closed at once: one line, exit 2; piped input still works', async () => {
    const cwd = await tempDir();
    const env = { OPENAI_BASE_URL: fake.url, HERMES_DATA_DIR: path.join(cwd, 'data') };
    const closed = await run(cwd, env, 'closed');
    expect(closed.code).toBe(2);
    expect(closed.stderr).toMatch(/nothing to talk to: no Slack or Discord settings .* or start it in an interactive terminal/);
    expect(closed.stderr.trim().split('\n').filter((l) => !l.startsWith('{'))).toHaveLength(1);
    const piped = await run(cwd, env, ['hi']);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toContain('hermes> ok');
  }, 120_000);

  it('warns at start, naming OPENAI_BASE_URL, when the model server cannot be reached', async () => {
    const cwd = await tempDir();
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const dead = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/v1`;
    await new Promise<void>((r) => probe.close(() => r()));
    // The probe runs in the background after "ready": the chat stays open until its warning is out.
    const r = await run(cwd, { OPENAI_BASE_URL: dead, HERMES_DATA_DIR: path.join(cwd, 'data') }, ['/status'], ['--chat'], /not reachable/);
    expect(r.code).toBe(0);
    const warning = r.stderr.split('\n').find((l) => l.includes('not reachable'))!;
    expect(JSON.parse(warning)).toMatchObject({ level: 40, msg: `model server not reachable at ${dead} (ECONNREFUSED): check OPENAI_BASE_URL and that the server is running; the bot keeps running and retries at each message.` });
  }, 90_000);
});
