import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import type { RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { DEFAULT_USER, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { startBot, type Bot } from '../discord/discord-harness.js';
import { startSandbox, type SandboxFixture } from '../sandbox/sandbox-helper.js';
import { fileTools } from '../../tools/files.js';
import { runCodeTool } from '../../tools/run-code.js';

/**
 * Files through the real discord.js client against the fake Discord: an attachment is saved before
 * the turn and read by the model; send_file replies with the file attached, exact bytes.
 */

let fx: SandboxFixture;
let bot: Bot;
beforeAll(async () => {
  fx = await startSandbox();
  const tools = [...fileTools, ...(fx.sandbox ? [runCodeTool(fx.sandbox, { defaultTimeoutMs: 30_000, memoryMb: 256 })] : [])];
  bot = await startBot({ discord: await startFakeDiscord(), env: { HERMES_WORKSPACE_DIR: path.join(fx.dir, 'discord') }, tools });
});
afterAll(async () => {
  await bot?.close();
  await bot?.discord.close();
  await fx?.close();
});

const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;

describe('Discord files', () => {
  it('an attached file is saved before the turn and read_file gives it to the model as outside data', async () => {
    const { discord, openai } = bot;
    const attachment = discord.cdnFile('notes.md', Buffer.from('# Plan\n- ship it\n'), 'text/markdown');
    const before = openai.requests.length;
    openai.setHandler((_req, n) => (n - before === 0 ? { toolCalls: [{ name: 'read_file', arguments: { path: 'attachments/notes.md' } }] } : { text: 'The plan is to ship it.' }));
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'what is the plan?', mentionBot: true, attachments: [attachment] });
    const answer = await discord.waitForCall((c) => c.method === 'POST' && body(c).content === 'The plan is to ship it.' && body(c).message_reference?.message_id === id, 20_000, 'the answer');
    expect(body(answer).message_reference?.message_id).toBe(id);
    const firstUser = JSON.stringify(openai.requests[before]!.messages.filter((m) => m.role === 'user').at(-1)?.content);
    expect(firstUser).toContain('attachments/notes.md (17 B, text/markdown)');
    const toolText = String(openai.requests[before + 1]!.messages.find((m) => m.role === 'tool')?.content);
    expect(toolText).toMatch(/<<<OUTSIDE_DATA id=\w+ source="attached file attachments\/notes.md">>>/);
    expect(toolText).toContain('- ship it');
    openai.setHandler(() => ({ text: 'ok' }));
  });

  it('run_code writes a file and send_file replies with it attached, exact bytes', async (ctx: TestContext) => {
    if (!fx.sandbox) ctx.skip();
    const { discord, openai } = bot;
    const before = openai.requests.length;
    openai.setHandler((_req, n) => {
      const i = n - before;
      if (i === 0) return { toolCalls: [{ name: 'run_code', arguments: { language: 'javascript', code: 'require("fs").writeFileSync("report.md", "# Report\\n\\u00e9t\\u00e9 \\u2713\\n")' } }] };
      if (i === 1) return { toolCalls: [{ name: 'send_file', arguments: { path: 'report.md', comment: 'Your report' } }] };
      return { text: 'Done.' };
    });
    // Another channel: the first test's conversation has read outside text, and there send_file would ask first.
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'write me a report', mentionBot: true, channelId: '300000000000000004' });
    const upload = await discord.waitForCall((c) => c.method === 'POST' && (c.files?.length ?? 0) > 0 && body(c).message_reference?.message_id === id, 30_000, 'the file upload');
    expect(upload.files![0]!.name).toBe('report.md');
    expect(upload.files![0]!.data.equals(Buffer.from('# Report\nété ✓\n', 'utf8'))).toBe(true);
    expect(body(upload).content).toBe('Your report');
    expect(body(upload).message_reference?.message_id).toBe(id);
    expect(body(upload).allowed_mentions?.parse).toEqual([]);
    await discord.waitForCall((c) => c.method === 'POST' && body(c).content === 'Done.' && body(c).message_reference?.message_id === id, 20_000, 'the answer');
  });
});
