import type { ScriptStep } from './case-schema.js';

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

/** A reply source for one case: call `next` once per chat-completions request. */
export function scriptedModel(script: ScriptStep[]): { next(req: { tools?: unknown[] }): ScriptedReply; played(): number } {
  let i = 0;
  return {
    next(req) {
      if (!req.tools || req.tools.length === 0) return { text: SUMMARY };
      const step = script[i];
      if (!step) return { text: SCRIPT_EXHAUSTED };
      i++;
      return toReply(step);
    },
    played: () => i,
  };
}
