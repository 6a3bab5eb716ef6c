import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { delegateTool } from '../../tools/delegate.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { FakeReply } from '../fakes/openai/fake-openai.js';
import { agentOf, toolReply, traceEvents, until } from './subagent-helpers.js';

/** A sub-agent that cannot finish comes back to the main agent as a clear tool error, never as silence. */

let h: Harness | undefined;
let dir: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const me = user('U3');
const dm = conv('D3', { isDm: true });
const tools = () => [calculator, delegateTool(resolveProfiles({ coder: false, writer: false }))!];

/** Runs one delegation; `sub` answers the sub-agent's requests. Returns the delegate call's result as the main model read it. */
async function delegateOnce(sub: (i: number) => FakeReply, env: Record<string, string> = {}): Promise<string | undefined> {
  h = await startHarness({ tools: tools(), env });
  const main: FakeReply[] = [{ toolCalls: [{ id: 'd1', name: 'delegate', arguments: { agent: 'researcher', task: 'Look into it' } }] }, { text: 'Done.' }];
  let n = 0;
  h.fake.setHandler((req) => (agentOf(req) ? sub(n++) : main.shift() ?? { text: 'script ran out' }));
  await h.core.gateway.handleMessage({ id: `f-${Date.now()}`, conversation: dm, speaker: me, text: 'please look into it', mentioned: true });
  await h.port.waitFor(isText, 30_000);
  await h.core.gateway.idle();
  const last = h.fake.requests.filter((r) => !agentOf(r)).at(-1)!;
  return toolReply(last, 'd1') ?? undefined;
}

describe('sub-agent failures', { timeout: 60_000 }, () => {
  it('a failed model call is a delegate error naming the agent and the reason', async () => {
    const reply = await delegateOnce(() => ({ status: 400, body: { error: { message: 'this request is not acceptable', type: 'invalid_request_error' } } }));
    expect(reply).toMatch(/^delegate failed: The researcher sub-agent stopped because its model call failed: .*not acceptable/);
    expect((await traceEvents(h!)).find((e) => e.type === 'subagent')).toMatchObject({ outcome: 'model_error:permanent', steps: 1 });
  });

  it("a model call over HERMES_MODEL_TIMEOUT_MS is a delegate error saying so; the turn goes on", async () => {
    const reply = await delegateOnce(() => ({ hang: true }), { HERMES_MODEL_TIMEOUT_MS: '900' });
    expect(reply).toBe('delegate failed: The researcher sub-agent stopped because its model call failed: The model did not answer within 900 ms (HERMES_MODEL_TIMEOUT_MS). Retry once only if that looks temporary; otherwise tell the user.');
    expect((await traceEvents(h!)).find((e) => e.type === 'subagent')).toMatchObject({ outcome: 'model_error:timeout', steps: 1 });
    expect(h!.port.texts().at(-1)).toBe('Done.');
  });

  it('the loop guards apply inside: a third identical call does not run, and the sub-agent is told why', async () => {
    const reply = await delegateOnce((i) => (i < 3 ? { toolCalls: [{ id: `same${i}`, name: 'calculator', arguments: { expression: '2 + 2' } }] } : { text: 'It is 4.' }));
    expect(reply).toBe('It is 4.');
    const sub = h!.fake.requests.filter((r) => agentOf(r));
    expect(sub).toHaveLength(4);
    expect(toolReply(sub[2]!, 'same1')).toContain('4');
    expect(toolReply(sub[3]!, 'same2')).toMatch(/^Not run: you already called calculator with exactly these arguments 2 times/);
    const runs = (await traceEvents(h!)).filter((e) => e.type === 'tool_call' && e.agent === 'researcher').map((e) => [e.ok, e.errorKind ?? null]);
    expect(runs).toEqual([[true, null], [true, null], [false, 'not_run']]);
  });

  it('the step limit of the profile is a delegate error', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-sub-cfg-'));
    await writeFile(path.join(dir, 'hermes.config.yaml'), 'agents:\n  researcher:\n    max_steps: 2\n');
    // The harness builds tools itself: a profile of 2 steps comes from the file the config names.
    const { loadConfig } = await import('../../src/settings/load-config.js');
    const loaded = loadConfig({ HERMES_CONFIG: path.join(dir, 'hermes.config.yaml') }, dir);
    expect(loaded.ok && loaded.config.agents.get('researcher')?.maxSteps).toBe(2);
    h = await startHarness({ tools: [calculator, delegateTool(loaded.ok ? loaded.config.agents : new Map())!] });
    const main: FakeReply[] = [{ toolCalls: [{ id: 'd1', name: 'delegate', arguments: { agent: 'researcher', task: 'Count forever' } }] }, { text: 'It could not finish.' }];
    let i = 0;
    h.fake.setHandler((req) => (agentOf(req) ? { toolCalls: [{ name: 'calculator', arguments: { expression: `${++i} + 1` } }] } : main.shift() ?? { text: 'x' }));
    await h.core.gateway.handleMessage({ id: `s-${Date.now()}`, conversation: dm, speaker: me, text: 'count', mentioned: true });
    await h.port.waitFor(isText, 30_000);
    expect(h.fake.requests.filter((r) => agentOf(r))).toHaveLength(2);
    expect(toolReply(h.fake.requests.at(-1)!, 'd1')).toBe('delegate failed: The researcher sub-agent used all 2 of its steps without a final answer, so nothing came back. Give it a smaller, clearer task, or do this part yourself.');
  });

  it("the delegate call's time limit aborts the sub-agent's model call", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-sub-cfg-'));
    const file = path.join(dir, 'hermes.config.yaml');
    await writeFile(file, 'tools:\n  delegate:\n    timeoutMs: 300\n');
    const reply = await delegateOnce(() => ({ hang: true }), { HERMES_CONFIG: file });
    expect(reply).toBe('delegate timed out after 300 ms and was aborted. It produced no result.');
    await until(() => h!.fake.inFlight === 0, 'the abandoned sub-agent request to close');
    expect(h!.fake.abandoned).toBe(1);
    const events = await traceEvents(h!);
    expect(events.find((e) => e.type === 'subagent')).toMatchObject({ agent: 'researcher', outcome: 'aborted' });
  });

  it('cuts a long answer and says so', async () => {
    const reply = await delegateOnce(() => ({ text: 'a'.repeat(9000) }));
    expect(reply).toBe(`${'a'.repeat(8000)}\n[The researcher sub-agent's answer was cut at 8000 of 9000 characters.]`);
  });

  it("stops when the speaker's daily tokens run out inside the sub-agent, and the turn ends with the budget notice", async () => {
    h = await startHarness({ tools: tools(), env: { HERMES_USER_DAILY_TOKENS: '1500' } });
    const main: FakeReply[] = [{ toolCalls: [{ id: 'd1', name: 'delegate', arguments: { agent: 'researcher', task: 'Expensive' } }], usage: { prompt_tokens: 100, completion_tokens: 10 } }];
    h.fake.setHandler((req) => (agentOf(req) ? { toolCalls: [{ name: 'calculator', arguments: { expression: '1+1' } }], usage: { prompt_tokens: 2000, completion_tokens: 10 } } : main.shift() ?? { text: 'must not be asked' }));
    await h.core.gateway.handleMessage({ id: `b-${Date.now()}`, conversation: dm, speaker: me, text: 'spend it', mentioned: true });
    const answer = await h.port.waitFor(isText, 30_000);
    expect(answer.text).toMatch(/daily/i);
    // One sub-agent call crossed the line; nothing was asked of the model after it.
    expect(h.fake.requests).toHaveLength(2);
    const events = await traceEvents(h);
    expect(events.find((e) => e.type === 'subagent')).toMatchObject({ outcome: 'budget_exhausted', steps: 1, promptTokens: 2000 });
    expect(events.find((e) => e.type === 'tool_call' && e.name === 'delegate')?.result).toMatch(/daily token budget \(the person's, this channel's or the bot's\) is used up/);
  });
});
