import { afterEach, describe, expect, it } from 'vitest';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { calculator } from '../../tools/calculator.js';
import { fetchUrlTool } from '../../tools/fetch-url.js';
import { sendWebhookTool } from '../../tools/send-webhook.js';
import { memoryTools } from '../../tools/memory.js';
import { delegateTool } from '../../tools/delegate.js';
import { resolveProfiles, type AgentsFile } from '../../src/settings/agent-profiles.js';
import { main as statsCli } from '../../src/operations/stats/stats-cli.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { FakeReply } from '../fakes/openai/fake-openai.js';
import { agentOf, messagesOf, systemOf, taskOf, toolNamesOf, toolReply, toolSpecOf, traceEvents, until } from './subagent-helpers.js';

/**
 * Delegation through the real core: gateway, agent loop, executor, the real openai SDK against the
 * fake server, SQLite on disk. The fake routes each request by its system prompt: the main agent's
 * replies come from `main`, a sub-agent's from `sub`.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const me = user('U1');
const dm = conv('D1', { isDm: true });
let n = 0;
const ask = (text: string) => h!.core.gateway.handleMessage({ id: `d${++n}-${Date.now()}`, conversation: dm, speaker: me, text, mentioned: true, replyTo: `ts${n}` });

function toolsFor(agents: AgentsFile = { coder: false, writer: false }) {
  return [getCurrentTime, calculator, fetchUrlTool, sendWebhookTool, ...memoryTools, delegateTool(resolveProfiles(agents))!];
}

describe('delegate', { timeout: 60_000 }, () => {
  it("runs the sub-agent on its own prompt and tools, without the parent's history or the user's facts", async () => {
    h = await startHarness({ tools: toolsFor() });
    // Turn 1: the user says something private and it is remembered.
    h.fake.enqueue(
      { toolCalls: [{ id: 'rem', name: 'remember_fact', arguments: { fact: 'favourite colour is TEAL-77' } }] },
      { text: 'Noted, and your codename BLUEBIRD-9 is safe with me.' },
    );
    await ask('my codename is BLUEBIRD-9; remember that my favourite colour is TEAL-77');
    await h.port.waitFor(isText, 30_000);

    const main: FakeReply[] = [
      { toolCalls: [{ id: 'del1', name: 'delegate', arguments: { agent: 'researcher', task: 'What is 17 * 23?', context: 'The user needs it for an invoice.' } }] },
      { text: 'The researcher says 391.' },
    ];
    const sub: FakeReply[] = [
      { toolCalls: [{ id: 'sub_calc', name: 'calculator', arguments: { expression: '17 * 23' } }] },
      { text: '17 * 23 = 391' },
    ];
    h.fake.setHandler((req) => (agentOf(req) ? sub.shift() : main.shift()) ?? { text: 'script ran out' });
    await ask('please work out 17*23 with your researcher');
    await h.port.waitForCount(isText, 2, 30_000);
    expect(h.port.texts().at(-1)).toBe('The researcher says 391.');

    const subRequests = h.fake.requests.filter((r) => agentOf(r) === 'researcher');
    expect(subRequests).toHaveLength(2);
    for (const r of subRequests) {
      expect(systemOf(r)).toMatch(/^You are the "researcher" sub-agent of Hermes/);
      expect(systemOf(r)).toContain('You research one question.');
      // Its own tools (web_search is not registered here), never delegate, never a gated tool or a memory tool.
      expect(toolNamesOf(r).sort()).toEqual(['calculator', 'fetch_url', 'get_current_time']);
      const text = JSON.stringify(messagesOf(r));
      expect(text).not.toContain('BLUEBIRD-9');
      expect(text).not.toContain('TEAL-77');
      expect(text).not.toContain('please work out');
    }
    expect(taskOf(subRequests[0]!)).toBe('Task:\nWhat is 17 * 23?\n\nContext from the main agent:\nThe user needs it for an invoice.');
    expect(toolReply(subRequests[1]!, 'sub_calc')).toContain('391');
    // The main agent did see its history and facts, and got the answer as the delegate call's result.
    const mainRequests = h.fake.requests.filter((r) => !agentOf(r));
    expect(systemOf(mainRequests.at(-1)!)).toContain('TEAL-77');
    expect(toolReply(mainRequests.at(-1)!, 'del1')).toBe('17 * 23 = 391');
    // The main model's delegate schema: the enabled profiles as the enum, their descriptions in the tool's.
    const spec = toolSpecOf(mainRequests.at(-1)!, 'delegate')!;
    expect(spec.parameters).toMatchObject({ properties: { agent: { enum: ['researcher'] } } });
    expect(spec.description).toContain('- researcher: Finds and checks facts on the web');
    expect(spec.description).not.toMatch(/- (coder|writer):/);

    // Traces: the sub-agent's calls nest under the parent turn and its delegate call, with the agent's name.
    const events = await traceEvents(h);
    const turnId = events.find((e) => e.type === 'tool_call' && e.name === 'delegate')!.turnId;
    const nested = events.filter((e) => e.turnId === turnId && e.agent === 'researcher' && e.type !== 'subagent');
    expect(nested.map((e) => e.type)).toEqual(['model_call', 'tool_call', 'model_call']);
    expect(nested.every((e) => e.parentCallId === 'del1')).toBe(true);
    const run = events.find((e) => e.type === 'subagent');
    expect(run).toMatchObject({ turnId, callId: 'del1', agent: 'researcher', outcome: 'answered', steps: 2 });
    // Every token of the turn's model calls, the sub-agent's included, is in the turn's end record.
    const calls = events.filter((e) => e.turnId === turnId && e.type === 'model_call') as Array<{ usage: { promptTokens: number; completionTokens: number } }>;
    const end = events.find((e) => e.turnId === turnId && e.type === 'turn_end') as { promptTokens: number; completionTokens: number };
    expect(calls).toHaveLength(4);
    expect(end.promptTokens).toBe(calls.reduce((s, c) => s + c.usage.promptTokens, 0));
    expect(end.completionTokens).toBe(calls.reduce((s, c) => s + c.usage.completionTokens, 0));
  });

  it('runs three delegations of one response at the same time (the default HERMES_MAX_PARALLEL_AGENTS), each result under its own call id', async () => {
    h = await startHarness({ tools: toolsFor() });
    const fake = h.fake;
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    const main: FakeReply[] = [
      { toolCalls: words.map((w, i) => ({ id: `par${i + 1}`, name: 'delegate', arguments: { agent: 'researcher', task: `Find the ${w} figure` } })) },
      { text: 'All four are in.' },
    ];
    fake.setHandler(async (req) => {
      if (!agentOf(req)) return main.shift() ?? { text: 'script ran out' };
      const word = /the (\w+) figure/.exec(taskOf(req))![1];
      // No sub-agent of the first three answers until the server holds all three requests at once:
      // sequential runs would never get here. The fourth gets a slot only when one of them is done.
      if (word !== 'delta') await until(() => fake.peakInFlight >= 3, 'three sub-agent requests in flight');
      return { text: `the ${word} figure is 42` };
    });
    await ask('get me alpha, beta, gamma and delta');
    await h.port.waitFor(isText, 30_000);
    expect(fake.peakInFlight).toBe(3);
    const last = h.fake.requests.at(-1)!;
    expect(agentOf(last)).toBeUndefined();
    expect(words.map((w, i) => toolReply(last, `par${i + 1}`))).toEqual(words.map((w) => `the ${w} figure is 42`));
  });

  it('runs at most HERMES_MAX_PARALLEL_AGENTS at once; the rest wait for a slot', async () => {
    h = await startHarness({ tools: toolsFor(), env: { HERMES_MAX_PARALLEL_AGENTS: '2' } });
    const fake = h.fake;
    const main: FakeReply[] = [
      { toolCalls: ['one', 'two', 'three'].map((w, i) => ({ id: `lim${i + 1}`, name: 'delegate', arguments: { agent: 'researcher', task: `Task ${w}` } })) },
      { text: 'done' },
    ];
    let answered = 0;
    let answeredWhenThirdArrived = -1;
    fake.setHandler(async (req) => {
      if (!agentOf(req)) return main.shift() ?? { text: 'script ran out' };
      const arrival = fake.requests.filter((r) => agentOf(r)).length;
      if (arrival <= 2) await until(() => fake.peakInFlight >= 2, 'two sub-agent requests in flight');
      else answeredWhenThirdArrived = answered;
      answered++;
      return { text: `answer to ${taskOf(req).slice(6)}` };
    });
    await ask('three things please');
    await h.port.waitFor(isText, 30_000);
    expect(fake.peakInFlight).toBe(2);
    // The third sub-agent started only once one of the first two had its answer.
    expect(answeredWhenThirdArrived).toBeGreaterThanOrEqual(1);
    const last = h.fake.requests.at(-1)!;
    expect([1, 2, 3].map((i) => toolReply(last, `lim${i}`))).toEqual(['answer to Task one', 'answer to Task two', 'answer to Task three']);
  });

  it('/hermes stop cancels a sub-agent whose model call is in flight', async () => {
    h = await startHarness({ tools: toolsFor() });
    const fake = h.fake;
    const main: FakeReply[] = [{ toolCalls: [{ id: 'stopme', name: 'delegate', arguments: { agent: 'researcher', task: 'Something slow' } }] }];
    fake.setHandler((req) => (agentOf(req) ? { hang: true } : main.shift() ?? { text: 'must not be asked again' }));
    await ask('do something slow');
    await until(() => fake.requests.some((r) => agentOf(r)) && fake.inFlight === 1, 'the sub-agent request');
    const reply = await h.core.gateway.handleCommand({ conversation: dm, speaker: me, text: 'stop' });
    expect(reply.text).toMatch(/stop/i);
    await h.core.gateway.idle();
    // The sub-agent's HTTP request was abandoned by the client, and nobody asked the model anything after.
    await until(() => fake.inFlight === 0, 'the cancelled request to close');
    expect(fake.abandoned).toBe(1);
    expect(fake.requests).toHaveLength(2);
    const events = await traceEvents(h);
    expect(events.find((e) => e.type === 'subagent')).toMatchObject({ agent: 'researcher', callId: 'stopme', outcome: 'aborted' });
    expect(events.find((e) => e.type === 'turn_end')).toMatchObject({ outcome: 'aborted' });
  });

  it("counts the sub-agent's tokens in the turn, /hermes status and the speaker's daily budget", async () => {
    h = await startHarness({ tools: toolsFor(), env: { HERMES_USER_DAILY_TOKENS: '100000' } });
    const usage = (prompt_tokens: number, completion_tokens: number) => ({ prompt_tokens, completion_tokens });
    const main: FakeReply[] = [
      { toolCalls: [{ id: 'tok', name: 'delegate', arguments: { agent: 'researcher', task: 'Add 2 and 2' } }], usage: usage(100, 10) },
      { text: 'It is 4.', usage: usage(100, 10) },
    ];
    const sub: FakeReply[] = [
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2 + 2' } }], usage: usage(1000, 50) },
      { text: '4', usage: usage(1000, 50) },
    ];
    h.fake.setHandler((req) => (agentOf(req) ? sub.shift() : main.shift()) ?? { text: 'script ran out' });
    await ask('what is 2+2? ask the researcher');
    await h.port.waitFor(isText, 30_000);
    await h.core.gateway.idle();
    const status = await h.core.gateway.handleCommand({ conversation: dm, speaker: me, text: 'status' });
    expect(status.text).toContain('Tokens: 2200 in, 120 out');
    expect(status.text).toMatch(/2[,.]?320 of your 100[,.]?000 daily tokens used/);
    expect(status.text).toMatch(/Sub-agents:\n  researcher: 1 runs?, 100% ok, 2000 in, 100 out/);
    // `npm run stats` reads the same trace files: the turn's total includes the sub-agent, which also has its own line.
    await h.core.flushTraces();
    const out: string[] = [];
    const code = await statsCli(['--user', 'slack:T1:U1'], { out: (l) => out.push(l), err: (l) => out.push(l), env: { HERMES_DATA_DIR: h.dataDir }, cwd: process.cwd() });
    expect(code).toBe(0);
    expect(out).toContain('Tokens: 2200 in, 120 out (2200 in per turn)');
    expect(out).toContainEqual(expect.stringMatching(/^  researcher: 1 run, 100% ok, 2000 in, 100 out, p50 \d+ ms/));
  });

  it('shutdown cancels a sub-agent in flight; after the restart it does not run again', async () => {
    h = await startHarness({ tools: toolsFor() });
    const fake = h.fake;
    const main: FakeReply[] = [{ toolCalls: [{ id: 'shut', name: 'delegate', arguments: { agent: 'researcher', task: 'Something slow' } }] }];
    fake.setHandler((req) => (agentOf(req) ? { hang: true } : main.shift() ?? { text: 'after the restart' }));
    await ask('do something slow');
    await until(() => fake.requests.some((r) => agentOf(r)) && fake.inFlight === 1, 'the sub-agent request');
    await h.restart();
    await until(() => fake.inFlight === 0, 'the cancelled request to close');
    expect(fake.abandoned).toBe(1);
    await h.core.gateway.idle();
    expect(fake.requests.filter((r) => agentOf(r))).toHaveLength(1);
    const events = await traceEvents(h);
    expect(events.find((e) => e.type === 'subagent')).toMatchObject({ callId: 'shut', outcome: 'aborted' });
  });
});
