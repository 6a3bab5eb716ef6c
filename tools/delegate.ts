import * as z from 'zod';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';
import { DELEGATE_TOOL, type AgentProfiles } from '../src/settings/agent-profiles.js';

const MAX_TASK_CHARS = 8_000;
const MAX_CONTEXT_CHARS = 20_000;
/** A sub-agent takes several model calls; the operator can change it (tools.delegate.timeoutMs). */
const DELEGATE_TIMEOUT_MS = 300_000;

/**
 * delegate: hands one focused task to a sub-agent profile (hermes.config.yaml `agents:`), which works
 * on a fresh context with its own small tool set and returns its final answer. The agent names and
 * descriptions come from the enabled profiles; with none enabled the tool does not exist.
 */
export function delegateTool(profiles: AgentProfiles) {
  const list = [...profiles.values()];
  const [first, ...rest] = list.map((p) => p.name);
  if (first === undefined) return undefined;
  return defineTool({
    name: DELEGATE_TOOL,
    description:
      'Hand one focused task to a specialist sub-agent and get its final answer back. The sub-agent starts fresh: it sees only `task` and `context` ' +
      '(not this conversation, not what you know about the user), uses its own few tools, and cannot ask anyone for approval, so keep actions that need ' +
      "approval (sending, saving memories, reminders, schedules) for yourself. Several delegate calls in one reply run in parallel. Agents:\n" +
      list.map((p) => `- ${p.name}: ${p.description}`).join('\n'),
    input: z.object({
      agent: z.enum([first, ...rest]).describe('Which sub-agent does the task'),
      task: z.string().trim().min(1).max(MAX_TASK_CHARS).describe('What to do, self-contained: the sub-agent knows nothing else'),
      context: z.string().max(MAX_CONTEXT_CHARS).optional().describe('Facts from this conversation the sub-agent needs (it cannot see the conversation)'),
    }),
    category: 'general',
    timeoutMs: DELEGATE_TIMEOUT_MS,
    // The answer is capped at 8,000 characters by the runner (with a note); room for that note.
    maxResultChars: 8_500,
    async run(args, ctx) {
      if (!ctx.agents) throw new Error('sub-agents cannot be started from here (a sub-agent cannot delegate).');
      return ctx.agents.run({ profile: profiles.get(args.agent)!, task: args.task, ...(args.context !== undefined && { context: args.context }) }, ctx.signal);
    },
  });
}
