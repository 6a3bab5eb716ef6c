import path from 'node:path';
import { formatIssue, presentValues } from './config-env.js';
import { redactSecrets } from '../basics/safety/secrets.js';
import { unknownSettingWarnings } from './unknown-settings.js';
import { resolveProfiles } from './agent-profiles.js';
import { resolveMcpServers } from './mcp-servers.js';
import { suggestedPrompts } from './slack-file.js';
import { configFilePath, readConfigFile } from './config-file.js';
import { envSchema, knownEnvNames } from './env-schema.js';
import type { Config, ExtensionsConfig } from './config.js';

/**
 * Every setting, validated once at start. Env is the primary interface; an optional
 * hermes.config.yaml|json holds per-tool settings. A problem becomes one line naming the
 * variable and the fix; main() prints them and exits 2.
 */

/** `warnings`: valid settings that will not take effect (e.g. a Slack secret without a bot token). */
export type ConfigResult = { ok: true; config: Config; warnings: string[] } | { ok: false; errors: string[] };

type Env = Record<string, string | undefined>;

/** Reads and validates the environment (and the optional config file). Pure apart from reading that file. */
export function loadConfig(env: Env, cwd = process.cwd()): ConfigResult {
  const present = presentValues(env);
  const schema = envSchema(cwd);
  const perArea = Object.fromEntries(Object.keys(schema.in.shape).map((area) => [area, present]));
  const parsed = schema.safeParse(perArea, { reportInput: true });
  // Issue paths start with the area; the line names the variable only.
  const errors = parsed.success ? [] : parsed.error.issues.map((i) => formatIssue({ ...i, path: i.path.slice(1) }, present, redactSecrets));

  const configFile = configFilePath(present, cwd);
  const file = readConfigFile(configFile, errors);
  const mcp = resolveMcpServers(file?.mcp_servers, present, configFile ? path.dirname(configFile) : cwd);
  errors.push(...mcp.errors);
  if (!parsed.success || errors.length) return { ok: false, errors };
  const extensions: ExtensionsConfig = {
    servers: mcp.servers,
    skillsDir: parsed.data.extensions.skillsDir,
    skillPins: Object.fromEntries(Object.entries(file?.skills ?? {}).flatMap(([name, s]) => (s.pin ? [[name, s.pin]] : []))),
    ...(configFile && { configFile }),
    secrets: mcp.secrets,
  };
  return { ok: true, config: { ...parsed.data.config, tools: file?.tools ?? {}, agents: resolveProfiles(file?.agents), slackAssistant: { suggestedPrompts: suggestedPrompts(file?.slack) }, extensions, channels: file?.channels ?? {} }, warnings: [...unusedSettings(present), ...unknownSettingWarnings(present, knownEnvNames())] };
}

/** No key for the default server (OpenAI): every model call would be refused, so say it once, at start. */
export const NO_MODEL_KEY =
  'OPENAI_API_KEY is not set, and without OPENAI_BASE_URL the model server is OpenAI, which refuses every call without a key: set OPENAI_API_KEY in .env, or set OPENAI_BASE_URL to a local server (e.g. http://localhost:11434/v1 for Ollama); to try the bot offline, see "npm run fake-model".';

/** Valid settings that do nothing without the variable that turns their platform on. */
function unusedSettings(env: Record<string, string>): string[] {
  const warnings: string[] = [];
  if (!env.SLACK_BOT_TOKEN && (env.SLACK_SIGNING_SECRET || env.SLACK_APP_TOKEN)) {
    warnings.push('SLACK_SIGNING_SECRET or SLACK_APP_TOKEN is set without SLACK_BOT_TOKEN, so Slack stays off: set SLACK_BOT_TOKEN (xoxb-…) to turn it on.');
  }
  if (!env.DISCORD_TOKEN && (env.DISCORD_GUILD_ID || env.DISCORD_API_URL)) {
    warnings.push('DISCORD_GUILD_ID or DISCORD_API_URL is set without DISCORD_TOKEN, so Discord stays off: set DISCORD_TOKEN to turn it on.');
  }
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL) warnings.push(NO_MODEL_KEY);
  if (env.HERMES_OTEL_CONTENT === 'true' && !env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    warnings.push('HERMES_OTEL_CONTENT is set without OTEL_EXPORTER_OTLP_ENDPOINT, so nothing is exported: set the endpoint to turn OpenTelemetry export on.');
  }
  return warnings;
}
