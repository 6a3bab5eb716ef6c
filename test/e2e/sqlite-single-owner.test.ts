import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startChat, type ChatProcess } from '../helpers/chat-process.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';

/**
 * Two real `npm run chat` processes on one HERMES_DATA_DIR: the second refuses (exit 2) and says
 * to use PostgreSQL; after the first is killed with -9, a third starts on the same file at once.
 */
let fake: FakeOpenAI;
let dataDir: string;
const started: ChatProcess[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI({ handler: (req) => ({ text: `echo: ${String(req.messages.at(-1)?.content ?? '').slice(-20)}` }) });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-owner-'));
});
afterAll(async () => {
  await Promise.all(started.map((c) => c.kill9()));
  await fake.close();
  await rm(dataDir, { recursive: true, force: true });
});

function chat(): ChatProcess {
  const c = startChat({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: FAKE_OPENAI_KEY, HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir });
  started.push(c);
  return c;
}

describe('one instance per SQLite file', () => {
  it('refuses a second instance with exit 2, and never blocks a restart after kill -9', async () => {
    const first = chat();
    first.send('first one here');
    await first.waitFor(/echo: .*first one here/, 60_000);

    const second = chat();
    expect(await second.exited()).toBe(2);
    expect(second.stderr()).toMatch(/another hermes instance is already running on the SQLite store .*hermes\.sqlite/);
    expect(second.stderr()).toMatch(/HERMES_STORE_URL=postgres:\/\//);

    await first.kill9();
    const third = chat();
    third.send('third one here');
    await third.waitFor(/echo: .*third one here/, 60_000);
  }, 180_000);
});
