import type { AnyTool } from '../src/capabilities/toolkit/tool-api.js';
import { getCurrentTime } from './get-current-time.js';
import { calculator } from './calculator.js';
import { fetchUrlTool } from './fetch-url.js';
import { webSearchTool, webSearchSettingsFromEnv } from './web-search.js';
import { sendWebhookTool } from './send-webhook.js';
import { memoryTools } from './memory.js';
import { reminderTools } from './reminders.js';
import { readChannelHistoryTool } from './read-channel-history.js';
import { searchConversationsTool } from './search-conversations.js';
import { scheduleTools } from './schedules.js';
import { fileTools } from './files.js';
import { viewImageTool } from './view-image.js';
import { runCodeTool } from './run-code.js';
import type { CodeSandbox } from '../src/capabilities/sandbox/code-sandbox.js';
import { delegateTool } from './delegate.js';
import { RUN_CODE_TOOL } from './run-code.js';
import { resolveProfiles, type AgentProfiles } from '../src/settings/agent-profiles.js';
import { READ_SKILL_FILE, skillTools, USE_SKILL } from './skills.js';
import type { SkillLibrary } from '../src/capabilities/skills/skill-library.js';

export interface BuiltinToolOptions {
  /** The sandbox that passed its start-up probe; without it run_code is not offered at all. */
  sandbox?: CodeSandbox;
  code?: { defaultTimeoutMs: number; memoryMb: number };
  /** The enabled sub-agent profiles (checked); default the built-in ones. None → no delegate tool. */
  agents?: AgentProfiles;
  /** The skills under HERMES_SKILLS_DIR; use_skill and read_skill_file are offered while one is usable. */
  skills?: SkillLibrary;
}

/** The built-in tool set, in the order the model sees them. Names are a stable contract (DESIGN.md). */
export function builtinTools(opts: BuiltinToolOptions = {}): AnyTool[] {
  const code = opts.sandbox ? [runCodeTool(opts.sandbox, opts.code ?? { defaultTimeoutMs: 60_000, memoryMb: 512 })] : [];
  const delegate = delegateTool(opts.agents ?? resolveProfiles(undefined));
  return [getCurrentTime, calculator, fetchUrlTool, webSearchTool, sendWebhookTool, ...memoryTools, ...reminderTools, ...scheduleTools, readChannelHistoryTool, searchConversationsTool, ...fileTools, viewImageTool, ...code, ...(opts.skills ? skillTools(opts.skills) : []), ...(delegate ? [delegate] : [])];
}

/**
 * Every built-in tool a sub-agent profile may name, for the start-up check of `agents:`. run_code is
 * on the list though it joins only once the sandbox probe passes (without it, a profile just lacks it).
 */
export function builtinToolCatalogue(): Array<{ name: string; needsApproval?: unknown }> {
  return [...builtinTools({ agents: new Map() }), { name: RUN_CODE_TOOL }, { name: USE_SKILL }, { name: READ_SKILL_FILE }];
}

/** Tool settings that come from environment variables (merged under hermes.config.yaml's). */
export function toolSettingsFromEnv(env: Record<string, string | undefined>): Record<string, Record<string, unknown>> {
  return { web_search: webSearchSettingsFromEnv(env) };
}
