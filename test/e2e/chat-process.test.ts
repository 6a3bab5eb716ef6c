import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { startChat, type ChatProcess } from '../helpers/chat-process.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The terminal chat as a user runs it: `npm run chat`, a pipe, the real SDK against the fake
 * model, SQLite on disk. Replies are scripted per user message, so each line of the script is
 * one scenario from the issue (two tools, bad tool name, bad arguments, timeout, step limit,
 * model outage), and kill -9 tests prove restarts lose nothing and run nothing twice.
 */

let fake: FakeOpenAI;
let web: FakeWeb;
let chat: ChatProcess | undefined;

type Msg = ChatCompletionRequestBody['messages'][number];

/** Step = model calls already made for the latest user message. */
function scenario(req: ChatCompletionRequestBody): { text: string; step: number } {
  const msgs = req.messages as Msg[];
  let lastUser = -1;
  msgs.forEach((m, i) => {
    if (m.role === 'user' && !String(m.content).startsWith('[system note]')) lastUser = i;
  });
  const step = msgs.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
  return { text: String(msgs[lastUser]?.content ?? ''), step };
}

function script(req: ChatCompletionRequestBody): FakeReply {
  const { text, step } = scenario(req);
  const pick = (replies: FakeReply[]) => replies[Math.min(step, replies.length - 1)]!;
  if (text.includes('tokyo')) {
    return pick([
      { toolCalls: [{ name: 'get_current_time', arguments: { timezone: 'Asia/Tokyo' } }] },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '12 * 12' } }] },
      { text: 'Tokyo time checked; 12 * 12 = 144.' },
    ]);
  }
  if (text.includes('badname')) return pick([{ toolCalls: [{ name: 'calculater', arguments: { expression: '1' } }] }, { text: 'recovered from a bad name' }]);
  if (text.includes('badargs')) return pick([{ toolCalls: [{ name: 'calculator', arguments: { expr: 1 } }] }, { text: 'recovered from bad arguments' }]);
  if (text.includes('slowpage')) return pick([{ toolCalls: [{ name: 'fetch_url', arguments: { url: web.url('/slow') } }] }, { text: 'the page timed out' }]);
  if (text.includes('loop')) return { toolCalls: [{ name: 'calculator', arguments: { expression: `${step} + 1` } }] };
  if (text.includes('outage')) return { status: 503, body: { error: { message: 'overloaded' } } };
  if (text.includes('webhook')) {
    return pick([
      { toolCalls: [{ id: 'call_hook', name: 'send_webhook', arguments: { url: web.url('/sink'), body: { hello: 'world' } } }] },
      { text: 'webhook sent' },
    ]);
  }
  if (text.includes('hang-second')) {
    return pick([{ toolCalls: [{ id: 'call_calc', name: 'calculator', arguments: { expression: '2+2' } }] }, { text: 'never arrives', delayMs: 60_000 }]);
  }
  return { text: `echo: ${text}` };
}

beforeAll(async () => {
  fake = await startFakeOpenAI({ handler: script });
  web = await startFakeWeb();
});
const dataDirs: string[] = [];
afterAll(async () => {
  await fake.close();
  await web.close();
  await Promise.all(dataDirs.map((d) => rm(d, { recursive: true, force: true })));
});
afterEach(async () => {
  await chat?.kill9();
  chat = undefined;
});

async function env(extra: Record<string, string> = {}) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-chat-'));
  dataDirs.push(dataDir);
  return {
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: FAKE_OPENAI_KEY,
    HERMES_MODEL_RETRIES: '0',
    HERMES_DATA_DIR: dataDir,
    HERMES_NET_ALLOW: `127.0.0.1:${web.port}`,
    HERMES_TOOL_TIMEOUT_MS: '800',
    HERMES_MAX_STEPS: '4',
    ...extra,
  };
}

describe('npm run chat through a pipe', () => {
  it('completes a multi-tool task and handles bad names, bad arguments, timeouts, the step limit and an outage', async () => {
    chat = startChat(await env());
    chat.send('what time is it in tokyo, and 12*12?');
    await chat.waitFor(/hermes> Tokyo time checked; 12 \* 12 = 144\./);
    expect(chat.stdout()).toMatch(/… running get_current_time/);
    expect(chat.stdout()).toMatch(/… running calculator/);
    chat.send('badname please');
    await chat.waitFor(/hermes> recovered from a bad name/);
    chat.send('badargs please');
    await chat.waitFor(/hermes> recovered from bad arguments/);
    chat.send('slowpage please');
    await chat.waitFor(/hermes> the page timed out/);
    chat.send('loop please');
    await chat.waitFor(/hermes> I stopped after 4 steps/);
    chat.send('outage please');
    await chat.waitFor(/hermes> The language model is not answering right now/);
    chat.send('/help');
    await chat.waitFor(/\/forget <id\|all>/);
    chat.endInput();
    expect(await chat.exited()).toBe(0);

    const toolResults = fake.requests.flatMap((r) => (r.messages as Msg[]).filter((m) => m.role === 'tool').map((m) => String(m.content)));
    expect(toolResults).toContainEqual(expect.stringMatching(/^There is no tool named "calculater"\. Did you mean "calculator"\?/));
    expect(toolResults).toContainEqual(expect.stringMatching(/^Invalid arguments for calculator:\n.*expression: required field is missing/s));
    expect(toolResults.some((t) => /timed out/i.test(t))).toBe(true);
    expect(chat.stdout() + chat.stderr()).not.toContain(FAKE_OPENAI_KEY);
  }, 180_000);

  it('asks before a risky tool; kill -9 with the approval pending, restart, approve: it runs exactly once', async () => {
    const e = await env();
    const hitsBefore = web.hits('/sink');
    chat = startChat(e);
    chat.send('send the webhook');
    await chat.waitFor(/Approve\? \[y\/N\]/);
    expect(chat.stdout()).toContain('send_webhook');
    expect(chat.stdout()).toContain(web.url('/sink'));
    expect(web.hits('/sink')).toBe(hitsBefore);
    await chat.kill9();

    chat = startChat(e);
    await chat.waitFor(/Approve\? \[y\/N\]/);
    chat.send('y');
    await chat.waitFor(/hermes> webhook sent/);
    expect(web.hits('/sink')).toBe(hitsBefore + 1);
    chat.endInput();
    expect(await chat.exited()).toBe(0);

    // A third start finds nothing pending and runs nothing again.
    chat = startChat(e);
    chat.send('hello again');
    await chat.waitFor(/hermes> echo: hello again/);
    expect(chat.stdout()).not.toMatch(/Approve\?/);
    expect(web.hits('/sink')).toBe(hitsBefore + 1);
  }, 180_000);

  it('kill -9 mid-turn leaves the session intact and valid after restart', async () => {
    const e = await env();
    chat = startChat(e);
    const sent = fake.requests.length;
    chat.send('hang-second please');
    await chat.waitFor(/… running calculator/);
    // The loop appends the tool result to the session before it calls the model again: once the
    // second (hanging) call carrying that result arrives, the result is stored.
    await waitFor('the second model call with the tool result', () => fake.requests.slice(sent).some((r) => (r.messages as Msg[]).some((m) => m.role === 'tool' && m.tool_call_id === 'call_calc')));
    await chat.kill9();

    chat = startChat(e);
    await chat.waitFor(/hermes> I was restarted while working on your message/);
    const before = fake.requests.length;
    chat.send('are you back?');
    await chat.waitFor(/hermes> echo: are you back\?/);
    const req = fake.requests[before]!;
    const msgs = req.messages as Msg[];
    expect(msgs.some((m) => m.role === 'user' && String(m.content).includes('hang-second please'))).toBe(true);
    // every tool call in the request has its result right after it
    const calls = msgs.flatMap((m) => (m.role === 'assistant' && m.tool_calls ? m.tool_calls.map((c) => c.id) : []));
    const results = new Set(msgs.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : [])));
    expect(calls).toContain('call_calc');
    for (const id of calls) expect(results.has(id)).toBe(true);
  }, 180_000);
});
