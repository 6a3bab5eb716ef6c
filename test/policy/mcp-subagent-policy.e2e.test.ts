import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../src/app/app.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import { calculator } from '../../tools/calculator.js';
import { delegateTool } from '../../tools/delegate.js';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import type { ChatCompletionRequestBody, FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { events, ROOT, STDIO_SERVER } from '../mcp/mcp-harness.js';
import { startBot } from '../discord/discord-harness.js';
import { startSlackHarness } from '../slack/slack-harness.js';
import { agentOf, toolNamesOf } from '../subagents/subagent-helpers.js';

/**
 * The two doors of a channel policy the other policy e2e tests do not walk through: MCP tools (a
 * real MCP server process over stdio) and sub-agents (`delegate` with the researcher profile). The
 * same checks run on Slack (real Bolt app, fake Slack) and Discord (real discord.js, fake Discord):
 * a denied MCP tool is not offered and a forced call never reaches the server; outside the
 * engineering channel no MCP tool is offered at all; a sub-agent started in the channel is not
 * offered a tool its profile has but the policy denies, and its forced call is refused.
 */

const REFUSED = 'did not run: the policy of this channel does not allow it here';

interface Rig {
  ai: FakeOpenAI;
  core: Core;
  /** Mentions the bot in the engineering channel or elsewhere and waits for an answer with `expect`. */
  ask(where: 'eng' | 'gen', text: string, expect: string): Promise<void>;
  mcpDir: string;
  close(): Promise<void>;
}

function configFor(engKey: string, mcpDir: string): string {
  return [
    'mcp_servers:',
    '  fake:',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: ["--import", "tsx", ${JSON.stringify(STDIO_SERVER)}]`,
    `    cwd: ${JSON.stringify(ROOT)}`,
    `    env: {FAKE_MCP_DIR: ${JSON.stringify(mcpDir)}}`,
    '    timeout_ms: 20000',
    'channels:',
    '  default:',
    '    tools: {deny: ["mcp__fake__*"]}',
    `  ${engKey}:`,
    // Replaces default's deny: the fake server's tools come back here, minus deleting; no calculator.
    '    tools: {deny: ["mcp__fake__delete_*", calculator]}',
    '',
  ].join('\n');
}

const tools = () => [calculator, getCurrentTime, delegateTool(resolveProfiles({ coder: false, writer: false }))!];
const toolMessages = (req: ChatCompletionRequestBody) => req.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

async function tempFiles(): Promise<{ dir: string; file: string; mcpDir: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-policy-doors-'));
  const mcpDir = path.join(dir, 'mcp');
  await mkdir(mcpDir);
  return { dir, file: path.join(dir, 'hermes.config.yaml'), mcpDir };
}

async function slackRig(): Promise<Rig> {
  const { dir, file, mcpDir } = await tempFiles();
  await writeFile(file, configFor('slack:CENG', mcpDir));
  const h = await startSlackHarness({ extraTools: tools(), env: { HERMES_CONFIG: file, HERMES_GROUNDING: 'off' } });
  await h.core.extensions.mcp!.settled(30_000);
  const channels = { eng: 'CENG', gen: 'CGEN' };
  return {
    ai: h.ai,
    core: h.core,
    mcpDir,
    async ask(where, text, answer) {
      await h.mention(channels[where], 'UDEV', text);
      await h.slack.waitFor(`the answer "${answer}"`, () => h.slack.posts({ channel: channels[where] }).some((p) => p.text.includes(answer)), 30_000);
    },
    async close() {
      await h.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function discordRig(): Promise<Rig> {
  const { dir, file, mcpDir } = await tempFiles();
  const channels = { eng: '300000000000000003', gen: '300000000000000004' };
  await writeFile(file, configFor(`discord:channel:${channels.eng}`, mcpDir));
  const bot = await startBot({ env: { HERMES_CONFIG: file, HERMES_GROUNDING: 'off' }, tools: tools() });
  await bot.core.extensions.mcp!.settled(30_000);
  return {
    ai: bot.openai,
    core: bot.core,
    mcpDir,
    async ask(where, text, answer) {
      bot.discord.sendGuildMessage({ author: DEFAULT_USER, content: text, mentionBot: true, channelId: channels[where] });
      await bot.discord.waitForCall((c) => c.method === 'POST' && c.path === `/channels/${channels[where]}/messages` && String((c.body as { content?: string })?.content ?? '').includes(answer), 30_000, `the answer "${answer}"`);
    },
    async close() {
      await bot.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

for (const [platform, start] of [['slack', slackRig], ['discord', discordRig]] as const) {
  describe(`MCP tools and sub-agents under a channel policy on ${platform}`, { timeout: 90_000 }, () => {
    let rig: Rig;
    beforeAll(async () => {
      rig = await start();
    }, 60_000);
    afterAll(async () => {
      await rig?.close();
    });

    it('MCP: the allowed tools are offered and run, a denied one is absent and a forced call never reaches the server; elsewhere none is offered', async () => {
      const { ai } = rig;
      const before = ai.requests.length;
      ai.enqueue(
        { toolCalls: [{ id: 'c_echo', name: 'mcp__fake__echo', arguments: { text: 'ping' } }] },
        { toolCalls: [{ id: 'c_del', name: 'mcp__fake__delete_file', arguments: { path: 'report.txt' } }] },
        { text: 'MCP round done.' },
      );
      await rig.ask('eng', 'echo ping, then delete report.txt', 'MCP round done.');
      const [first, second, third] = ai.requests.slice(before);
      const offered = toolNamesOf(first!);
      expect(offered).toContain('mcp__fake__echo');
      expect(offered).not.toContain('mcp__fake__delete_file');
      expect(offered).not.toContain('calculator');
      expect(toolMessages(second!).at(-1)).toContain('ping');
      expect(toolMessages(third!).at(-1)).toContain(`mcp__fake__delete_file ${REFUSED}`);
      expect(events(rig.mcpDir).filter((l) => l.startsWith('deleted'))).toEqual([]);
      const refused = await rig.core.audit.list({ kind: 'tool_refused' }, { limit: 50, offset: 0 });
      expect(refused.entries.some((e) => e.tool === 'mcp__fake__delete_file')).toBe(true);

      // Another channel: default denies every tool of the server.
      const mark = ai.requests.length;
      ai.enqueue({ toolCalls: [{ id: 'c_echo2', name: 'mcp__fake__echo', arguments: { text: 'pong' } }] }, { text: 'Elsewhere done.' });
      await rig.ask('gen', 'echo pong', 'Elsewhere done.');
      const [g1, g2] = ai.requests.slice(mark);
      expect(toolNamesOf(g1!).filter((n) => n.startsWith('mcp__'))).toEqual([]);
      expect(toolNamesOf(g1!)).toContain('calculator');
      expect(toolMessages(g2!).at(-1)).toContain(`mcp__fake__echo ${REFUSED}`);
    });

    it('a sub-agent started in the channel is not offered the denied tool its profile has, and its forced call is refused', async () => {
      const { ai } = rig;
      const main = [
        { toolCalls: [{ id: 'c_delegate', name: 'delegate', arguments: { agent: 'researcher', task: 'What is 6 * 7?' } }] },
        { text: 'The researcher could not calculate here.' },
      ];
      const sub = [{ toolCalls: [{ id: 'c_calc', name: 'calculator', arguments: { expression: '6 * 7' } }] }, { text: 'calculator is not available in this channel' }];
      const before = ai.requests.length;
      ai.setHandler((req) => (agentOf(req) ? sub.shift() : main.shift()) ?? { text: 'script ran out' });
      try {
        await rig.ask('eng', 'ask your researcher for 6*7', 'The researcher could not calculate here.');
      } finally {
        ai.setHandler(() => ({ text: 'ok' }));
      }
      const subRequests = ai.requests.slice(before).filter((r) => agentOf(r) === 'researcher');
      expect(subRequests).toHaveLength(2);
      // The researcher profile lists calculator; the channel denies it.
      expect(toolNamesOf(subRequests[0]!)).toContain('get_current_time');
      expect(toolNamesOf(subRequests[0]!)).not.toContain('calculator');
      expect(toolMessages(subRequests[1]!).at(-1)).toContain(`calculator ${REFUSED}`);
    });
  });
}
