/**
 * Trace lines shaped exactly as src/runtime/trace/tracer.ts writes them (ts first, then the event's own
 * keys), for index and page tests that need many turns or hand-made odd lines.
 */
export function line(ts: string, event: Record<string, unknown>): string {
  return `${JSON.stringify({ ts, ...event })}\n`;
}

export function turnLines(turnId: string, at: Date, opts: { text?: string; platform?: string; userKey?: string; tool?: string; toolOk?: boolean; outcome?: string; args?: unknown; result?: string; agent?: string } = {}): string {
  const t = (ms: number) => new Date(at.getTime() + ms).toISOString();
  const tool = opts.tool ?? 'calculator';
  const args = opts.args ?? { expression: '6 * 7' };
  let out = line(t(0), { type: 'turn_start', turnId, sessionId: `s-${turnId}`, platform: opts.platform ?? 'slack', userKey: opts.userKey ?? 'slack:T1:U1', text: opts.text ?? `question ${turnId}` });
  out += line(t(5), {
    type: 'model_call', turnId, step: 1, model: 'fake-model',
    messages: [{ role: 'system', content: 'You are hermes.' }, { role: 'user', content: opts.text ?? `question ${turnId}` }],
    tools: [tool], response: { content: null, toolCalls: [{ id: 'c1', name: tool, arguments: JSON.stringify(args) }], parseErrors: [] },
    usage: { promptTokens: 100, completionTokens: 10 }, latencyMs: 40,
  });
  out += line(t(50), { type: 'tool_call', turnId, callId: 'c1', name: tool, args, ok: opts.toolOk ?? true, result: opts.result ?? '42', durationMs: 3, ...(opts.toolOk === false && { errorKind: 'execution' }), ...(opts.agent && { agent: opts.agent }) });
  out += line(t(60), {
    type: 'model_call', turnId, step: 2, model: 'fake-model', messages: [{ role: 'user', content: 'q' }], tools: [tool],
    response: { content: 'The answer is 42.', toolCalls: [], parseErrors: [] }, usage: { promptTokens: 120, completionTokens: 8 }, latencyMs: 30,
  });
  out += line(t(100), { type: 'turn_end', turnId, outcome: opts.outcome ?? 'answered', steps: 2, durationMs: 100, promptTokens: 220, completionTokens: 18 });
  return out;
}
