import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { systemClock } from '../../src/basics/clock.js';
import { probeSandbox } from '../../src/capabilities/sandbox/probe.js';
import { builtinTools } from '../../tools/index.js';
import { conv, isApproval, isText, startHarness, user } from '../helpers/core-harness.js';
import { startSandbox, TEST_LIMITS, type SandboxFixture } from './sandbox-helper.js';

/** run_code inside real turns: the real core, the real sandbox, the scripted model. */

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

const code = { defaultTimeoutMs: 60_000, memoryMb: 256 };

describe('run_code in a turn', () => {
  it('an infinite loop is killed at its limit, the model is told, and the bot answers the next message', async (ctx) => {
    const sandbox = need(ctx);
    const h = await startHarness({ tools: builtinTools({ sandbox, code }), env: { HERMES_WORKSPACE_DIR: path.join(fx.dir, 'turns') } });
    try {
      h.fake.enqueue(
        { toolCalls: [{ id: 'c1', name: 'run_code', arguments: { language: 'python', code: 'while True:\n    pass', timeout_s: 2 } }] },
        { text: 'That program never ends, so I stopped it.' },
        { toolCalls: [{ id: 'c2', name: 'run_code', arguments: { language: 'bash', code: 'echo $((6*7)) > answer.txt; cat answer.txt' } }] },
        { text: 'The answer is 42.' },
      );
      const c = conv('C1');
      await h.core.gateway.handleMessage({ id: 'm1', conversation: c, speaker: user('U1'), text: 'run forever', mentioned: true });
      await h.port.waitFor(isText, 20_000);
      const toolMessage = h.fake.requests[1]!.messages.find((m) => m.role === 'tool');
      expect(String(toolMessage?.content)).toContain('timed out: yes');
      expect(String(toolMessage?.content)).toContain('It was stopped at the time limit (2 s)');

      await h.core.gateway.handleMessage({ id: 'm2', conversation: c, speaker: user('U1'), text: 'now compute 6*7', mentioned: true });
      await h.port.waitForCount((e) => e.kind === 'text', 2, 20_000);
      expect(h.port.texts()).toEqual(['That program never ends, so I stopped it.', 'The answer is 42.']);
      const second = String(h.fake.requests[3]!.messages.filter((m) => m.role === 'tool').at(-1)?.content);
      expect(second).toContain('exit code: 0');
      expect(second).toContain('files created: answer.txt');
      expect(second).toContain('stdout:\n42');
    } finally {
      await h.close();
    }
  });

  it('needs no approval by default; tools.run_code.needsApproval makes it ask', async (ctx) => {
    const sandbox = need(ctx);
    const h2 = await startHarness({ tools: builtinTools({ sandbox, code }), env: { HERMES_WORKSPACE_DIR: path.join(fx.dir, 'approval') } });
    h2.fake.enqueue({ toolCalls: [{ id: 'c0', name: 'run_code', arguments: { language: 'bash', code: 'echo plain' } }] }, { text: 'ran it' });
    try {
      await h2.core.gateway.handleMessage({ id: 'm0', conversation: conv('C2'), speaker: user('U1'), text: 'run it', mentioned: true });
      await h2.port.waitFor(isText, 15_000);
      expect(h2.port.approvals()).toEqual([]);
      expect(String(h2.fake.requests[1]!.messages.at(-1)?.content)).toContain('stdout:\nplain');
      // The per-tool setting (hermes.config tools.run_code.needsApproval) on the same config, after a restart.
      h2.config.tools.run_code = { needsApproval: true };
      await h2.restart();
      h2.fake.enqueue({ toolCalls: [{ id: 'c1', name: 'run_code', arguments: { language: 'bash', code: 'echo hi' } }] });
      await h2.core.gateway.handleMessage({ id: 'm1', conversation: conv('C3'), speaker: user('U1'), text: 'say hi', mentioned: true });
      const prompt = await h2.port.waitFor(isApproval, 10_000);
      expect(prompt.view.toolName).toBe('run_code');
    } finally {
      await h2.close();
    }
  });
});

describe('when the sandbox cannot start', () => {
  it('run_code is not offered and the reason names the fix', async () => {
    const probe = await probeSandbox({ workspaceDir: path.join(fx.dir, 'none'), limits: TEST_LIMITS, clock: systemClock, searchPath: '/nonexistent' });
    expect(probe).toEqual({ ok: false, problem: expect.stringContaining('apt-get install bubblewrap') });
    const names = builtinTools({}).map((t) => t.name);
    expect(names).not.toContain('run_code');
    expect(names).toEqual(expect.arrayContaining(['list_files', 'read_file', 'write_file', 'send_file']));
  });
});
