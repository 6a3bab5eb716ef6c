import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../fakes/openai/fake-model-cli.js';
import { DEMO_HELP, demoReply } from '../fakes/openai/demo-rules.js';
import { startChat, type ChatProcess } from '../helpers/chat-process.js';

/** `npm run fake-model`: what it prints, and a newcomer's first session against it (tools, an approval, memory). */

const dirs: string[] = [];
let chat: ChatProcess | undefined;
afterAll(async () => {
  await chat?.kill9();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('demo rules', () => {
  const req = (...messages: Array<{ role: 'user' | 'tool' | 'assistant'; content: string; tool_call_id?: string }>) =>
    ({ model: 'm', messages }) as Parameters<typeof demoReply>[0];
  it('answers the listed phrases with tool calls and anything else with the list', () => {
    expect(demoReply(req({ role: 'user', content: 'remember that I like tea' }), 'http://s/sink')).toEqual({ toolCalls: [{ name: 'remember_fact', arguments: { fact: 'I like tea' } }] });
    expect(demoReply(req({ role: 'user', content: 'calculate 12*34' }), 'http://s/sink')).toEqual({ toolCalls: [{ name: 'calculator', arguments: { expression: '12*34' } }] });
    expect(demoReply(req({ role: 'user', content: 'post a webhook' }), 'http://s/sink')).toMatchObject({ toolCalls: [{ name: 'send_webhook', arguments: { url: 'http://s/sink' } }] });
    expect(demoReply(req({ role: 'user', content: 'hello' }), 'http://s/sink')).toEqual({ text: DEMO_HELP });
    expect(demoReply(req({ role: 'user', content: 'x' }, { role: 'tool', content: 'Not run: send_webhook did not run', tool_call_id: 'a' }), 'u')).toMatchObject({ text: expect.stringMatching(/did not run/) });
  });
});

describe('npm run fake-model', () => {
  it('says it is a development aid, prints the chat line, and serves a first session', async () => {
    const lines: string[] = [];
    let stop!: () => void;
    const stopped = new Promise<void>((r) => { stop = r; });
    const exit = main(['--port', '0'], { out: (l) => lines.push(l), err: (l) => lines.push(l), env: {}, cwd: process.cwd() }, stopped);
    const started = Date.now();
    while (!lines.some((l) => l.includes('npm run chat')) && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(lines.join('\n')).toMatch(/development aid/);
    const m = /OPENAI_BASE_URL=(\S+) HERMES_NET_ALLOW=(\S+) npm run chat/.exec(lines.join('\n'));
    expect(m).not.toBeNull();

    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-demo-'));
    dirs.push(dataDir);
    chat = startChat({ OPENAI_BASE_URL: m![1]!, HERMES_NET_ALLOW: m![2]!, HERMES_DATA_DIR: dataDir });
    chat.send('what time is it?');
    await chat.waitFor(/… running get_current_time[\s\S]*hermes> Done\. The tool answered:\n\d{4}-\d\d-\d\dT/);
    chat.send('remember that I like tea');
    await chat.waitFor(/hermes> Done\. The tool answered:\n.*(Remembered|Saved|stored).*I like tea/i);
    chat.send('post a webhook');
    await chat.waitFor(/Approve\? \[y\/N\]/);
    chat.send('y');
    await chat.waitFor(/hermes> Done\. The tool answered:\n.*200/);
    chat.send('/memory');
    await chat.waitFor(/I like tea/);
    chat.endInput();
    expect(await chat.exited()).toBe(0);
    chat = undefined;

    stop();
    expect(await exit).toBe(0);
  }, 180_000);

  it('refuses a bad port with the fix', async () => {
    const lines: string[] = [];
    expect(await main(['--port', 'x'], { out: (l) => lines.push(l), err: (l) => lines.push(l), env: {}, cwd: process.cwd() }, Promise.resolve())).toBe(2);
    expect(lines[0]).toMatch(/--port x is not a TCP port/);
  });
});
