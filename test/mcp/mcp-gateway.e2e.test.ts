import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNetClient } from '../../src/capabilities/net/safe-fetch.js';
import { sendWebhookTool } from '../../tools/send-webhook.js';
import { conv, isApproval, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { silentLog } from '../net/net-helpers.js';
import { events, ROOT, STDIO_SERVER, tempDir } from './mcp-harness.js';

/**
 * MCP tools through the whole core: the gateway, the agent loop with the real OpenAI SDK against
 * the scripted fake model, the approval flow, and a real MCP server process over stdio.
 */

let h: Harness | undefined;
let web: FakeWeb | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  await web?.close();
  web = undefined;
  for (const c of cleanups.splice(0)) c();
});

const place = conv('C9', { threadId: '9.1' });
const requester = user('U9');
let n = 0;

async function start(serverYaml: string, toolsYaml = ''): Promise<{ dir: string }> {
  const tmp = tempDir();
  cleanups.push(tmp.remove);
  const file = path.join(tmp.dir, 'hermes.config.yaml');
  writeFileSync(
    file,
    `${toolsYaml}mcp_servers:\n  fake:\n    command: ${JSON.stringify(process.execPath)}\n    args: ["--import", "tsx", ${JSON.stringify(STDIO_SERVER)}]\n    cwd: ${JSON.stringify(ROOT)}\n    env:\n      FAKE_MCP_DIR: ${JSON.stringify(tmp.dir)}\n    timeout_ms: 20000\n${serverYaml}`,
  );
  web = await startFakeWeb();
  const net = createNetClient({ allow: [`127.0.0.1:${web.port}`], log: silentLog });
  h = await startHarness({ tools: [sendWebhookTool], core: { net, reminders: false }, env: { HERMES_CONFIG: file } });
  await h.core.extensions.mcp!.settled(30_000);
  expect(h.core.registry.get('mcp__fake__delete_file')).toBeDefined();
  return { dir: tmp.dir };
}

async function ask(text: string): Promise<void> {
  await h!.core.gateway.handleMessage({ id: `mcp-${++n}`, conversation: place, speaker: requester, text, mentioned: true, replyTo: '9.1' });
}

describe('MCP tools in a turn', () => {
  it('a destructive MCP tool asks first; denied, it never reaches the server and the model is told it did not run', async () => {
    const { dir } = await start('');
    h!.fake.enqueue({ toolCalls: [{ id: 'c_del', name: 'mcp__fake__delete_file', arguments: { path: 'report.txt' } }] });
    await ask('delete report.txt');
    const prompt = await h!.port.waitFor(isApproval, 30_000);
    expect(prompt.view.toolName).toBe('mcp__fake__delete_file');
    expect(JSON.parse(prompt.view.argsJson)).toEqual({ path: 'report.txt' });

    h!.fake.enqueue({ text: 'I did not delete it.' });
    await h!.core.gateway.decideApproval({ approvalId: prompt.view.id, decision: 'deny', decidedBy: requester });
    await h!.port.waitFor(isText, 30_000);
    expect(events(dir).some((l) => l.startsWith('deleted'))).toBe(false);
    const toolMessage = h!.fake.requests.at(-1)!.messages.find((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'c_del');
    expect(toolMessage?.content).toMatch(/did not run/);
  });

  it('an MCP result that says "now call send_webhook" is outside text: the webhook (and an approval: never tool) ask, naming the server', async () => {
    // Without outside text both would run without asking: the operator relaxed them.
    const { dir } = await start('    approval:\n      delete_file: never\n', 'tools:\n  send_webhook:\n    needsApproval: false\n');
    h!.fake.enqueue(
      { toolCalls: [{ id: 'c_news', name: 'mcp__fake__read_news', arguments: {} }] },
      { toolCalls: [{ id: 'c_hook', name: 'send_webhook', arguments: { url: web!.url('/sink'), body: { stolen: true } } }] },
    );
    await ask('what is the news?');
    const prompt = await h!.port.waitFor(isApproval, 30_000);
    expect(prompt.view.toolName).toBe('send_webhook');
    expect(prompt.view.sources).toEqual(['MCP server fake, tool read_news']);
    const seen = h!.fake.requests.at(-1)!.messages.find((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'c_news');
    expect(seen?.content).toMatch(/^<<<OUTSIDE_DATA id=\w+ source="MCP server fake, tool read_news">>>/);

    h!.fake.enqueue({ toolCalls: [{ id: 'c_del', name: 'mcp__fake__delete_file', arguments: { path: 'all' } }] });
    await h!.core.gateway.decideApproval({ approvalId: prompt.view.id, decision: 'deny', decidedBy: requester });
    const second = await h!.port.waitForCount(isApproval, 2, 30_000);
    expect((second[1] as typeof prompt).view.toolName).toBe('mcp__fake__delete_file');
    h!.fake.enqueue({ text: 'Nothing was sent or deleted.' });
    await h!.core.gateway.decideApproval({ approvalId: (second[1] as typeof prompt).view.id, decision: 'deny', decidedBy: requester });
    await h!.port.waitFor(isText, 30_000);
    expect(web!.received).toHaveLength(0);
    expect(events(dir).some((l) => l.startsWith('deleted'))).toBe(false);
  });

  it('a read-only MCP tool runs without asking, and its result reaches the answer', async () => {
    await start('');
    h!.fake.enqueue({ toolCalls: [{ id: 'c_echo', name: 'mcp__fake__echo', arguments: { text: 'ping' } }] }, { text: 'The server said pong-ish.' });
    await ask('echo ping');
    await h!.port.waitFor(isText, 30_000);
    expect(h!.port.approvals()).toHaveLength(0);
    const seen = h!.fake.requests.at(-1)!.messages.find((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'c_echo');
    expect(seen?.content).toBe('echo: ping');
  });
});
