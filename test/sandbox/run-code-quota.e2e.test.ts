import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { builtinTools } from '../../tools/index.js';
import { conv, isText, startHarness, user } from '../helpers/core-harness.js';
import { startSandbox, type SandboxFixture } from './sandbox-helper.js';

/**
 * Code in the sandbox writes files directly, so a run can leave the workspace over its quota
 * (each file is capped, their sum is not). The run that did it says so at once — the model in
 * the result, the person in the conversation — and the files it wrote stay.
 */

let fx: SandboxFixture;
beforeAll(async () => {
  fx = await startSandbox();
});
afterAll(async () => {
  await fx?.close();
});

function need(ctx: TestContext) {
  if (!fx.sandbox) ctx.skip();
  return fx.sandbox!;
}

type Sent = { role: string; content?: string | null; tool_call_id?: string };

describe('run_code and the workspace quota', () => {
  it('a run that leaves the workspace over quota is reported to the model and the person right then, and its files are kept', async (ctx) => {
    const sandbox = need(ctx);
    const dir = path.join(fx.dir, 'quota');
    const h = await startHarness({ tools: builtinTools({ sandbox, code: { defaultTimeoutMs: 60_000, memoryMb: 256 } }), env: { HERMES_WORKSPACE_DIR: dir, HERMES_WORKSPACE_MB: '1' } });
    try {
      const fill = "head -c 600000 /dev/zero > a.bin && head -c 600000 /dev/zero > b.bin && echo written";
      h.fake.enqueue(
        { toolCalls: [{ id: 'big', name: 'run_code', arguments: { language: 'bash', code: fill } }] },
        { text: 'Your workspace is full now; shall I delete a.bin?' },
        { toolCalls: [{ id: 'small', name: 'run_code', arguments: { language: 'bash', code: 'echo fits' } }] },
        { text: 'Still over.' },
      );
      const c = conv('C1');
      await h.core.gateway.handleMessage({ id: 'q1', conversation: c, speaker: user('U1'), text: 'make two big files', mentioned: true });
      await h.port.waitForCount(isText, 2, 30_000);

      // The person hears it first, then the model's answer.
      expect(h.port.texts()).toEqual([
        "This conversation's files now take 1.1 MB, more than the 1.0 MB allowed. They are kept, but nothing new can be saved here until some are deleted: ask me to delete files you no longer need, or start a fresh conversation with /hermes new.",
        'Your workspace is full now; shall I delete a.bin?',
      ]);
      const result = String((h.fake.requests[1]!.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === 'big')?.content);
      expect(result).toMatch(/^The workspace now holds 1\.1 MB, over its quota of 1\.0 MB\. The files are kept, but nothing more can be written here/);
      expect(result).toContain('files created: a.bin, b.bin');
      expect(result).toContain('stdout:\nwritten');

      // Both files are still there, whole.
      const [folder] = await readdir(dir);
      for (const f of ['a.bin', 'b.bin']) expect((await stat(path.join(dir, folder!, f))).size).toBe(600_000);

      // A run that writes nothing new still says the workspace is over, so it is never forgotten.
      await h.core.gateway.handleMessage({ id: 'q2', conversation: c, speaker: user('U1'), text: 'say fits', mentioned: true });
      await h.port.waitForCount(isText, 4, 30_000);
      const second = String((h.fake.requests[3]!.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === 'small')?.content);
      expect(second).toMatch(/^The workspace now holds 1\.1 MB, over its quota/);
      expect(h.port.texts().slice(2)).toEqual([h.port.texts()[0], 'Still over.']);
    } finally {
      await h.close();
    }
  });

  it('a run within the quota says nothing about it', async (ctx) => {
    const sandbox = need(ctx);
    const h = await startHarness({ tools: builtinTools({ sandbox, code: { defaultTimeoutMs: 60_000, memoryMb: 256 } }), env: { HERMES_WORKSPACE_DIR: path.join(fx.dir, 'within'), HERMES_WORKSPACE_MB: '1' } });
    try {
      h.fake.enqueue({ toolCalls: [{ id: 'ok', name: 'run_code', arguments: { language: 'bash', code: 'head -c 500000 /dev/zero > a.bin; echo done' } }] }, { text: 'Done.' });
      await h.core.gateway.handleMessage({ id: 'w1', conversation: conv('C2'), speaker: user('U1'), text: 'one file', mentioned: true });
      await h.port.waitFor(isText, 30_000);
      expect(h.port.texts()).toEqual(['Done.']);
      const result = String((h.fake.requests[1]!.messages as Sent[]).find((m) => m.role === 'tool')?.content);
      expect(result).toMatch(/^exit code: 0/);
      expect(result).not.toContain('quota');
    } finally {
      await h.close();
    }
  });

  it('code that makes 20,001 empty files before a big one cannot hide it from the quota (the count is exact)', async (ctx) => {
    const sandbox = need(ctx);
    const h = await startHarness({ tools: builtinTools({ sandbox, code: { defaultTimeoutMs: 60_000, memoryMb: 256 } }), env: { HERMES_WORKSPACE_DIR: path.join(fx.dir, 'many'), HERMES_WORKSPACE_MB: '1' } });
    try {
      const code = 'mkdir -p a && cd a && seq -w 0 20000 | xargs touch && cd .. && head -c 2800000 /dev/zero > zzz.bin && echo hidden';
      h.fake.enqueue({ toolCalls: [{ id: 'hide', name: 'run_code', arguments: { language: 'bash', code, timeout_s: 120 } }] }, { text: 'Done.' });
      await h.core.gateway.handleMessage({ id: 'm1', conversation: conv('C3'), speaker: user('U1'), text: 'many files', mentioned: true });
      await h.port.waitForCount(isText, 2, 120_000);
      const result = String((h.fake.requests[1]!.messages as Sent[]).find((m) => m.role === 'tool')?.content);
      // 20,002 entries are past the default cap of 10,000 files and folders: over, whatever the bytes.
      expect(result).toMatch(/^The workspace now holds more than 10,000 files and folders \(the limit is 10,000\)\. The files are kept/);
      expect(h.port.texts()[0]).toMatch(/^This conversation's files now take more than 10,000 files and folders/);
    } finally {
      await h.close();
    }
  }, 180_000);
});
