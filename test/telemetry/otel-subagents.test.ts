import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { delegateTool } from '../../tools/delegate.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import type { FakeReply } from '../fakes/openai/fake-openai.js';
import { startFakeCollector, type FakeCollector } from '../fakes/otlp/fake-collector.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { agentOf, messagesOf, taskOf } from '../subagents/subagent-helpers.js';

/**
 * Sub-agents in the exported trace, through the real delegate tool: two researcher runs in
 * parallel, each under the delegate call that started it, each holding its own model and tool
 * calls, all inside the one turn.
 */

let h: Harness | undefined;
let collector: FakeCollector | undefined;
afterEach(async () => {
  await h?.close();
  await collector?.close();
  h = undefined;
  collector = undefined;
});

describe('OpenTelemetry export with sub-agents', () => {
  it('nests each run as turn > execute_tool delegate > invoke_agent researcher > chat / execute_tool', { timeout: 60_000 }, async () => {
    collector = await startFakeCollector();
    h = await startHarness({ tools: [calculator, delegateTool(resolveProfiles({ coder: false, writer: false }))!], env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } });
    const main: FakeReply[] = [
      { toolCalls: [
        { id: 'del_a', name: 'delegate', arguments: { agent: 'researcher', task: 'Work out 2+2' } },
        { id: 'del_b', name: 'delegate', arguments: { agent: 'researcher', task: 'Work out 3+3' } },
      ], usage: { prompt_tokens: 50, completion_tokens: 5 } },
      { text: '4 and 6.', usage: { prompt_tokens: 60, completion_tokens: 3 } },
    ];
    h.fake.setHandler((req) => {
      if (!agentOf(req)) return main.shift() ?? { text: 'script ran out' };
      const which = taskOf(req).includes('2+2') ? 'a' : 'b';
      const answered = messagesOf(req).some((m) => m.role === 'tool');
      return answered
        ? { text: which === 'a' ? '4' : '6', usage: { prompt_tokens: 20, completion_tokens: 1 } }
        : { toolCalls: [{ id: `calc_${which}`, name: 'calculator', arguments: { expression: which === 'a' ? '2+2' : '3+3' } }], usage: { prompt_tokens: 10, completion_tokens: 2 } };
    });
    await h.core.gateway.handleMessage({ id: `sa-${Date.now()}`, conversation: conv('D1', { isDm: true }), speaker: user('U1'), text: 'ask two researchers', mentioned: true });
    expect((await h.port.waitFor(isText, 30_000)).text).toBe('4 and 6.');
    await h.core.flushTraces();
    const spans = await collector.waitFor((s) => s.some((x) => x.name === 'invoke_agent hermes'));

    const turn = spans.find((s) => s.name === 'invoke_agent hermes')!;
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const path = (s: (typeof spans)[number]): string[] => {
      const names = [s.name];
      for (let p = s.parentSpanId; p; p = byId.get(p)?.parentSpanId) names.unshift(byId.get(p)?.name ?? `missing ${p}`);
      return names;
    };
    expect(spans.every((s) => s.traceId === turn.traceId)).toBe(true);
    expect(spans.map(path).map((p) => p.join(' > ')).sort()).toEqual([
      'invoke_agent hermes',
      'invoke_agent hermes > chat gpt-4o-mini',
      'invoke_agent hermes > chat gpt-4o-mini',
      'invoke_agent hermes > execute_tool delegate',
      'invoke_agent hermes > execute_tool delegate',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher > chat gpt-4o-mini',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher > chat gpt-4o-mini',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher > chat gpt-4o-mini',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher > chat gpt-4o-mini',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher > execute_tool calculator',
      'invoke_agent hermes > execute_tool delegate > invoke_agent researcher > execute_tool calculator',
    ]);

    // Each run sits under its own delegate call and holds its own calculator call.
    for (const [del, calc] of [['del_a', 'calc_a'], ['del_b', 'calc_b']] as const) {
      const delegateSpan = spans.find((s) => s.attributes['gen_ai.tool.call.id'] === del)!;
      const run = spans.find((s) => s.parentSpanId === delegateSpan.spanId)!;
      const calcSpan = spans.find((s) => s.attributes['gen_ai.tool.call.id'] === calc)!;
      expect(calcSpan.parentSpanId).toBe(run.spanId);
      expect(run.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'researcher',
        'gen_ai.usage.input_tokens': 30,
        'gen_ai.usage.output_tokens': 3,
        'hermes.agent.outcome': 'answered',
        'hermes.agent.steps': 2,
      });
      expect(calcSpan.attributes['gen_ai.agent.name']).toBe('researcher');
      expect(run.startMs).toBeGreaterThanOrEqual(delegateSpan.startMs);
      expect(run.endMs).toBeLessThanOrEqual(delegateSpan.endMs);
    }
    // The turn counts its sub-agents' tokens too.
    expect([turn.attributes['gen_ai.usage.input_tokens'], turn.attributes['gen_ai.usage.output_tokens']]).toEqual([50 + 60 + 2 * 30, 5 + 3 + 2 * 3]);
  });
});
