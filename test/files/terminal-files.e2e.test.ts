import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { startFakeOpenAI, type ChatCompletionRequestBody, type FakeOpenAI, type FakeReply } from '../fakes/openai/fake-openai.js';
import { startChat } from '../helpers/chat-process.js';
import { startSandbox, traversableTempDir, type SandboxFixture } from '../sandbox/sandbox-helper.js';
import { rm } from 'node:fs/promises';

/**
 * `npm run chat` as a person runs it: main.ts probes the sandbox and offers run_code, send_file
 * prints the file's path, and `/new` starts a new, empty workspace while the old one stays.
 */

let fake: FakeOpenAI;
let fx: SandboxFixture;
let dir: string;
beforeAll(async () => {
  fx = await startSandbox();
  dir = await traversableTempDir('hermes-chat-files-');
  fake = await startFakeOpenAI({ handler: script });
});
afterAll(async () => {
  await fake?.close();
  await fx?.close();
  await rm(dir, { recursive: true, force: true });
});

function script(req: ChatCompletionRequestBody): FakeReply {
  const msgs = req.messages;
  const lastUser = msgs.map((m) => m.role).lastIndexOf('user');
  const text = String(msgs[lastUser]?.content ?? '');
  const step = msgs.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
  const tools = (req.tools ?? []).map((t) => (t.type === 'function' ? t.function.name : ''));
  if (text.includes('make a report')) {
    return [
      { toolCalls: [{ name: 'run_code', arguments: { language: 'bash', code: 'printf "# Report\\nall good\\n" > report.md' } }] },
      { toolCalls: [{ name: 'send_file', arguments: { path: 'report.md', comment: 'the report' } }] },
      { text: 'Report sent.' },
    ][Math.min(step, 2)]!;
  }
  if (text.includes('what files')) return step === 0 ? { toolCalls: [{ name: 'list_files', arguments: {} }] } : { text: `listing done; tools: ${tools.join(',')}` };
  return { text: 'ok' };
}

describe('files in the terminal chat', () => {
  it('run_code is offered, send_file prints the path, /new starts an empty workspace and keeps the old one', async (ctx: TestContext) => {
    if (!fx.sandbox) ctx.skip();
    const workspaces = path.join(dir, 'workspaces');
    const chat = startChat({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: path.join(dir, 'data'), HERMES_WORKSPACE_DIR: workspaces });
    try {
      chat.send('please make a report');
      const line = await chat.waitFor(/hermes> \(file\) (\S+) — the report/, 60_000);
      const printed = /\(file\) (\S+)/.exec(line)![1]!;
      expect(await readFile(printed, 'utf8')).toBe('# Report\nall good\n');
      expect(printed.startsWith(workspaces)).toBe(true);
      await chat.waitFor(/hermes> Report sent\./, 20_000);

      const mark = chat.stdout().length;
      chat.send('/new');
      await chat.waitFor(/fresh conversation/, 20_000, mark);
      chat.send('what files are there?');
      await chat.waitFor(/listing done; tools: .*run_code/, 30_000, mark);
      const listing = String(fake.requests.at(-1)!.messages.at(-1)!.content);
      expect(listing).toContain('The workspace is empty.');
      // The old session's folder (with report.md) is still there, beside the new one.
      const folders = await readdir(workspaces);
      expect(folders.filter((f) => !f.startsWith('.'))).toHaveLength(2);
    } finally {
      chat.endInput();
      await chat.kill9();
    }
  }, 120_000);
});
