import type { AnyTool } from '../src/toolkit/tool-api.js';
import { getCurrentTime } from './get-current-time.js';
import { calculator } from './calculator.js';
import { fetchUrlTool } from './fetch-url.js';
import { webSearchTool, webSearchSettingsFromEnv } from './web-search.js';
import { sendWebhookTool } from './send-webhook.js';
import { memoryTools } from './memory.js';
import { reminderTools } from './reminders.js';
import { readChannelHistoryTool } from './read-channel-history.js';
import { scheduleTools } from './schedules.js';

/** The built-in tool set, in the order the model sees them. Names are a stable contract (DESIGN.md). */
export function builtinTools(): AnyTool[] {
  return [getCurrentTime, calculator, fetchUrlTool, webSearchTool, sendWebhookTool, ...memoryTools, ...reminderTools, ...scheduleTools, readChannelHistoryTool];
}

/** Tool settings that come from environment variables (merged under hermes.config.yaml's). */
export function toolSettingsFromEnv(env: Record<string, string | undefined>): Record<string, Record<string, unknown>> {
  return { web_search: webSearchSettingsFromEnv(env) };
}
