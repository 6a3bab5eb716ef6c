import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { agentOfPrompt } from '../../src/agent/subagents/subagent-text.js';
import type { TraceEvent } from '../../src/runtime/trace/tracer.js';
import type { Harness } from '../helpers/core-harness.js';

export type Sent = { role: string; content?: string | null; tool_call_id?: string; tool_calls?: Array<{ id: string; function: { name: string } }> };

export const messagesOf = (req: ChatCompletionRequestBody) => req.messages as Sent[];
export const systemOf = (req: ChatCompletionRequestBody) => String(messagesOf(req)[0]?.content ?? '');
/** The sub-agent a request came from (by its system prompt), or undefined for the main agent. */
export const agentOf = (req: ChatCompletionRequestBody) => agentOfPrompt(systemOf(req));
/** One function tool as a request offered it to the model (name, description, JSON schema of its arguments). */
export function toolSpecOf(req: ChatCompletionRequestBody, name: string) {
  const tool = req.tools?.find((t) => t.type === 'function' && t.function.name === name);
  return tool?.type === 'function' ? tool.function : undefined;
}
export const toolNamesOf = (req: ChatCompletionRequestBody) => (req.tools ?? []).map((t) => (t as { function: { name: string } }).function.name);
/** The sub-agent's task, as its one user message states it. */
export const taskOf = (req: ChatCompletionRequestBody) => String(messagesOf(req).find((m) => m.role === 'user')?.content ?? '');
export const toolReply = (req: ChatCompletionRequestBody, callId: string) => messagesOf(req).find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? undefined;

export async function traceEvents(h: Harness): Promise<Array<TraceEvent & Record<string, unknown>>> {
  await h.core.flushTraces();
  const dir = path.join(h.dataDir, 'traces');
  const { readdir } = await import('node:fs/promises');
  const lines: string[] = [];
  for (const f of (await readdir(dir)).sort()) lines.push(...(await readFile(path.join(dir, f), 'utf8')).split('\n').filter(Boolean));
  return lines.map((l) => JSON.parse(l) as TraceEvent & Record<string, unknown>);
}

/** Resolves once `check` holds, polling on each turn of the event loop's timer queue; fails after `ms`. */
export async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
