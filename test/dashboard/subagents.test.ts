import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { delegateTool } from '../../tools/delegate.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import { agentOfPrompt } from '../../src/agent/subagents/subagent-text.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { ChatCompletionRequestBody, FakeReply } from '../fakes/openai/fake-openai.js';
import { serveDashboard, TOKEN, type Served } from './dashboard-helper.js';

/**
 * Sub-agents on the turn page: a real turn in which the main agent delegates twice in one
 * response (two researcher runs in parallel, each using the calculator). Each run must appear as
 * its own nested block right under its delegate call, holding only its own calls.
 */

let h: Harness;
let d: Served;
let turnId: string;

const agentOf = (req: ChatCompletionRequestBody) => agentOfPrompt(String((req.messages[0] as { content?: unknown }).content ?? ''));
const taskOf = (req: ChatCompletionRequestBody) => JSON.stringify(req.messages);

beforeAll(async () => {
  h = await startHarness({ tools: [getCurrentTime, calculator, delegateTool(resolveProfiles({ coder: false, writer: false }))!] });
  const main: FakeReply[] = [
    { toolCalls: [
      { id: 'del_a', name: 'delegate', arguments: { agent: 'researcher', task: 'Compute 17 * 23' } },
      { id: 'del_b', name: 'delegate', arguments: { agent: 'researcher', task: 'Compute 6 * 7' } },
    ] },
    { text: 'Both done: 391 and 42.' },
  ];
  h.fake.setHandler((req) => {
    if (!agentOf(req)) return main.shift() ?? { text: 'script ran out' };
    const which = taskOf(req).includes('17 * 23') ? '17 * 23' : '6 * 7';
    const answered = (req.messages as Array<{ role: string }>).some((m) => m.role === 'tool');
    return answered ? { text: `${which} done` } : { toolCalls: [{ id: `calc_${which.replace(/\D+/g, '_')}`, name: 'calculator', arguments: { expression: which } }] };
  });
  await h.core.gateway.handleMessage({ id: 'sa1', conversation: conv('D1', { isDm: true }), speaker: user('U1'), text: 'work out two products with researchers', mentioned: true, replyTo: 'ts1' });
  await h.port.waitFor(isText, 30_000);
  await h.core.flushTraces();
  d = await serveDashboard({ tracesDir: path.join(h.dataDir, 'traces'), evalsDir: path.join(h.dataDir, 'evals') });
  await d.dashboard.index.refresh();
  turnId = d.dashboard.index.turns()[0]!.turnId;
}, 60_000);

afterAll(async () => {
  await d?.close();
  await h?.close();
});

describe('sub-agents on the dashboard', () => {
  it('nests each sub-agent run under its own delegate call with its summary', async () => {
    const page = await (await d.get(`/dashboard/turns/${encodeURIComponent(turnId)}`, { authorization: `Bearer ${TOKEN}` })).text();
    const blocks = [...page.matchAll(/<section class="agent" data-agent="researcher">([\s\S]*?)<\/section>/g)].map((m) => m[1]!);
    expect(blocks).toHaveLength(2);
    for (const [i, product] of [['17 * 23', '391'], ['6 * 7', '42']].entries()) {
      const block = blocks.find((b) => b.includes(product![0]!))!;
      expect(block, `run ${i}`).toMatch(/answered · \d+ steps/);
      expect(block).toContain('data-tool="calculator"');
      expect(block).toContain(`<pre>${product![1]}</pre>`);
      // Only its own calls: the other run's expression is not in this block.
      expect(block).not.toContain(i === 0 ? '6 * 7' : '17 * 23');
    }
    // Each block comes right after its delegate call's record.
    const delegateThenBlock = /data-tool="delegate"(?:(?!class="event)[\s\S])*?<\/div><section class="agent"/g;
    expect(page.match(delegateThenBlock)).toHaveLength(2);
    const list = await (await d.get('/dashboard/turns', { authorization: `Bearer ${TOKEN}` })).text();
    expect(list).toContain('sub-agents: researcher, researcher');
  });
});
