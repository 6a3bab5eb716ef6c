import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesWith, startSandbox, type SandboxFixture } from './sandbox-helper.js';

/**
 * A run stopped while bubblewrap is still setting up its namespaces (a tiny time limit, or a slow
 * machine where bwrap takes longer than the limit to start) must still end at once and leave no
 * process behind. Killing bwrap alone is not enough there: its child may not yet have asked to
 * die with it.
 */

let fx: SandboxFixture;
beforeAll(async () => {
  fx = await startSandbox();
});
afterAll(async () => {
  await fx?.close();
});

describe('run_code stopped during the sandbox start', () => {
  it('every run ends within seconds and leaves no process behind, wherever in the start the stop lands', async (ctx) => {
    if (!fx.sandbox) ctx.skip();
    const sandbox = fx.sandbox!;
    const token = `4000.${process.pid}${Date.now() % 100_000}`;
    const slow: string[] = [];
    for (let i = 0; i < 40; i++) {
      // Limits from 1 to 40 ms land at different points of bwrap's start on this machine.
      const timeoutMs = 1 + (i % 40);
      const started = Date.now();
      const r = await sandbox.run({
        workspace: fx.workspace(`start-${i % 4}`),
        language: 'bash',
        code: `sleep ${token} & sleep ${token}`,
        timeoutMs,
      });
      const took = Date.now() - started;
      if (took > 10_000) slow.push(`run ${i} (limit ${timeoutMs} ms) took ${took} ms`);
      expect(r.timedOut, `run ${i}`).toBe(true);
    }
    expect(slow).toEqual([]);
    expect(await processesWith(token)).toEqual([]);
  }, 120_000);
});
