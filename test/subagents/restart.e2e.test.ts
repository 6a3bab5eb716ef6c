import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../fakes/openai/fake-openai.js';
import { startChat, type ChatProcess } from '../helpers/chat-process.js';
import { agentOf, messagesOf, toolReply } from './subagent-helpers.js';

/**
 * The terminal chat as a process, killed with SIGKILL while a sub-agent's model call hangs: after the
 * restart the turn is reported interrupted, the delegate call is answered as not finished, and
 * neither the sub-agent nor its tools run again. Also shows the sub-agent's progress line.
 */

let fake: FakeOpenAI;
let chat: ChatProcess | undefined;
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-sub-restart-'));
  const main: FakeReply[] = [{ toolCalls: [{ id: 'call_deleg', name: 'delegate', arguments: { agent: 'researcher', task: 'Work out 6 * 7, slowly' } }] }];
  const sub: FakeReply[] = [{ toolCalls: [{ id: 'call_sub_calc', name: 'calculator', arguments: { expression: '6 * 7' } }] }, { hang: true }];
  fake = await startFakeOpenAI({
    handler: (req) => {
      if (agentOf(req)) return sub.shift() ?? { text: 'the sub-agent must not run again' };
      const last = messagesOf(req).filter((m) => m.role === 'user').at(-1)?.content ?? '';
      return String(last).includes('are you back') ? { text: 'back and listening' } : main.shift() ?? { text: 'nothing more' };
    },
  });
});
afterEach(async () => {
  await chat?.kill9();
  chat = undefined;
});
afterAll(async () => {
  await fake.close();
  await rm(dataDir, { recursive: true, force: true });
});

it('a restart while a sub-agent works is an interrupted turn: nothing re-runs, the user is told', async () => {
  const env = { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir };
  chat = startChat(env);
  chat.send('ask the researcher what 6*7 is');
  await chat.waitFor(/… researcher: calculator/);
  expect(chat.stdout()).toMatch(/… running delegate/);
  // The sub-agent's second model call is in flight (and never answered): the process dies now.
  const deadline = Date.now() + 20_000;
  while (fake.requests.filter((r) => agentOf(r)).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(fake.requests.filter((r) => agentOf(r))).toHaveLength(2);
  await chat.kill9();

  chat = startChat(env);
  await chat.waitFor(/hermes> I was restarted while working on your message/);
  const before = fake.requests.length;
  chat.send('are you back?');
  await chat.waitFor(/hermes> back and listening/);
  const req = fake.requests[before]!;
  expect(agentOf(req)).toBeUndefined();
  expect(toolReply(req, 'call_deleg')).toMatch(/delegate/);
  expect(toolReply(req, 'call_deleg')).toMatch(/interrupted|restart/i);
  // Only the two sub-agent calls before the kill: nothing ran again.
  expect(fake.requests.filter((r) => agentOf(r))).toHaveLength(2);
}, 120_000);
