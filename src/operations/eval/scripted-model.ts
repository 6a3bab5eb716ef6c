import type { ScriptStep } from './case-schema.js';
import { agentOfPrompt } from '../../agent/subagents/subagent-text.js';

/**
 * The scripted model: plays a case's `script:` (the ideal replies) one per model call, so the
 * harness can be proven without a real model. The replies have the shape the fake OpenAI server
 * (test/fakes/openai) takes, so the real SDK, provider and agent loop run unchanged.
 */
export type ScriptedReply =
  | { text: string }
  | { toolCalls: Array<{ name: string; arguments: string | Record<string, unknown> }>; text?: string };

/** Said when the model is called more often than the script has replies (a loop the case did not plan). */
export const SCRIPT_EXHAUSTED = 'The script has no more replies.';
/** The context summariser's calls (no tools offered) are answered without using up the script. */
const SUMMARY = 'Earlier conversation summarised.';

export function toReply(step: ScriptStep): ScriptedReply {
  if ('tools' in step) return { toolCalls: step.tools.map((t) => ({ name: t.name, arguments: t.args ?? {} })), ...(step.say ? { text: step.say } : {}) };
  if ('tool' in step) return { toolCalls: [{ name: step.tool, arguments: step.args ?? {} }], ...(step.say ? { text: step.say } : {}) };
  return { text: step.say };
}

/** The part of a chat-completions request the scripted model reads. */
export interface ScriptedRequest {
  tools?: unknown[];
  messages?: ReadonlyArray<{ role: string; content?: unknown }>;
}

/**
 * A reply source for one case: call `next` once per chat-completions request. Each request takes
 * the first unplayed step meant for it: the main agent's steps have no `agent`; a sub-agent's name
 * it (and, when given, words of its task), so parallel sub-agents get their own replies whatever
 * order their requests arrive in.
 */
export function scriptedModel(script: ScriptStep[]): { next(req: ScriptedRequest): ScriptedReply; played(): number } {
  const played = new Set<number>();
  return {
    next(req) {
      if (!req.tools || req.tools.length === 0) return { text: SUMMARY };
      const system = req.messages?.find((m) => m.role === 'system');
      const agent = typeof system?.content === 'string' ? agentOfPrompt(system.content) : undefined;
      const firstUser = req.messages?.find((m) => m.role === 'user');
      const task = typeof firstUser?.content === 'string' ? firstUser.content.toLowerCase() : '';
      const i = script.findIndex((s, n) => !played.has(n) && s.agent === agent && (agent === undefined || s.task === undefined || task.includes(s.task.toLowerCase())));
      if (i < 0) return { text: SCRIPT_EXHAUSTED };
      played.add(i);
      return toReply(script[i]!);
    },
    played: () => played.size,
  };
}
