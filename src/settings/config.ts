import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as z from 'zod';
import { commaList, decimal, formatIssue, httpUrl, oneOf, otlpHeaders, presentValues, text, timeZone, wholeNumber } from './config-env.js';
import { ALLOW_ENTRY, ALLOW_ENTRY_FIX, toAllowRule, type AllowRule } from './allow-rules.js';
import { redactSecrets } from '../basics/safety/secrets.js';
import { unknownSettingWarnings } from './unknown-settings.js';
import { dashboardEnv, type DashboardConfig } from './dashboard-config.js';
import { agentsFileSchema, resolveProfiles, type AgentProfiles } from './agent-profiles.js';
import { mcpServersFileSchema, resolveMcpServers, skillsFileSchema, type McpServerConfig } from './mcp-servers.js';
import { channelsFileSchema, type ChannelsFile } from './channel-policies.js';
import { slackFileSchema, suggestedPrompts, type SuggestedPrompt } from './slack-file.js';
import { BUSY_MODES, DEFAULT_BUSY_MODE, type BusyMode } from './busy-mode.js';

/**
 * Every setting, validated once at start. Env is the primary interface; an optional
 * hermes.config.yaml|json holds per-tool settings. A problem becomes one line naming the
 * variable and the fix; main() prints them and exits 2.
 */

const toolSettingsSchema = z
  .object({
    enabled: z.boolean().optional(),
    timeoutMs: z.number().int().positive().optional(),
    maxResultChars: z.number().int().positive().optional(),
    needsApproval: z.boolean().optional(),
    /** Overrides the tool's declared effect (docs/conversation-context.md): relaxes or tightens the outside-text gate. */
    effect: z.enum(['none', 'durable', 'outward']).optional(),
    settings: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export type ToolSettings = z.infer<typeof toolSettingsSchema>;

const fileSchema = z
  .object({
    tools: z.record(z.string(), toolSettingsSchema).optional(),
    /** Sub-agent profiles (docs/sub-agents.md); their tool names are checked once the tools are known. */
    agents: agentsFileSchema.optional(),
    /** MCP servers whose tools the agent may use (docs/mcp-and-skills.md). */
    mcp_servers: mcpServersFileSchema.optional(),
    /** Skill pins (docs/mcp-and-skills.md). */
    skills: skillsFileSchema.optional(),
    /** Per-channel policies (docs/access-and-limits.md); reloaded on SIGHUP and on a change of the file. */
    channels: channelsFileSchema.optional(),
    /** What the Slack app shows in assistant threads (docs/slack.md "Assistant threads"). */
    slack: slackFileSchema.optional(),
  })
  .strict();

export type ConfigFile = z.infer<typeof fileSchema>;

export interface Config {
  model: {
    apiKey: string;
    baseURL?: string;
    name: string;
    temperature: number;
    maxTokens: number;
    timeoutMs: number;
    maxRetries: number;
    toolMode: 'native' | 'json';
    /** Answers shown as the model writes them (HERMES_STREAMING). */
    streaming: boolean;
    /** HERMES_EMBEDDING_MODEL: messages and facts are also embedded through the same server's /embeddings. */
    embeddingModel?: string;
  };
  slack?: { botToken: string; signingSecret?: string; appToken?: string; apiUrl?: string };
  /** hermes.config `slack:`: the suggested prompts of a new assistant thread (defaults when unset). */
  slackAssistant: { suggestedPrompts: SuggestedPrompt[] };
  /** HERMES_BUSY_MODE: a message that arrives while its conversation's turn runs steers it, waits, or interrupts it. */
  busyMode: BusyMode;
  discord?: { token: string; apiUrl?: string; guildId?: string };
  port: number;
  dataDir: string;
  storeUrl?: string;
  /** Several instances on PostgreSQL: how soon another instance takes over the Discord connection. */
  failoverS: number;
  limits: {
    maxSteps: number;
    contextTokens: number;
    toolTimeoutMs: number;
    approvalTtlMs: number;
    maxConcurrentTurns: number;
    /** A turn shows "working" only after running this long (quick answers need no indicator). */
    progressDelayMs: number;
    /** Earlier thread messages read before a turn (newest kept); 0 turns thread context off. */
    threadContextMessages: number;
    /** Sub-agents of one turn running at the same time (HERMES_MAX_PARALLEL_AGENTS). */
    maxParallelAgents: number;
    /** HERMES_GROUNDING: an answer with figures no tool gave gets one more step (agent/grounding.ts). */
    grounding: 'retry' | 'off';
  };
  /** Scheduled tasks: shortest interval, how late a missed run may still run, active ones per user. */
  schedules: { minIntervalS: number; graceS: number; maxPerUser: number };
  /** `slack:U123`, `discord:456` … */
  admins: string[];
  /** Who may use the bot and how much (docs/access-and-limits.md). */
  usage: {
    /** HERMES_ALLOW; empty = everyone. */
    allow: AllowRule[];
    /** HERMES_USER_RATE, messages per minute per person; 0 = off. */
    ratePerMinute: number;
    /** HERMES_USER_DAILY_TOKENS per person per UTC day; 0 = no limit. */
    dailyTokens: number;
    /** HERMES_DAILY_TOKENS for the whole bot per UTC day (admins too); 0 = no limit. */
    botDailyTokens: number;
  };
  /** `channels:` of the config file as written (src/settings/channel-policies.ts resolves it). */
  channels: ChannelsFile;
  /** `host` or `host:port` entries the operator explicitly allows. */
  netAllow: string[];
  timezone: string;
  logLevel: string;
  tools: Record<string, ToolSettings>;
  /** Enabled sub-agent profiles: the built-ins merged with hermes.config `agents:`. */
  agents: AgentProfiles;
  /** Workspaces, attachments and run_code (docs/files-and-code.md). */
  files: {
    workspaceDir: string;
    workspaceMb: number;
    maxFileMb: number;
    codeTimeoutMs: number;
    codeMemoryMb: number;
  };
  /** Images for the model (docs/files-and-code.md#images). */
  vision: {
    /** HERMES_VISION: `auto` asks the model server once per model and remembers. */
    mode: 'auto' | 'on' | 'off';
    /** HERMES_MAX_IMAGE_MB in bytes: larger images are kept as files but not shown. */
    maxImageBytes: number;
  };
  /** HERMES_DASHBOARD_TOKEN set: the signed-in trace dashboard on PORT (docs/dashboard.md). */
  dashboard?: DashboardConfig;
  /** OpenTelemetry export (docs/telemetry.md); absent = off, and nothing of it is loaded. */
  telemetry?: TelemetryConfig;
  /** MCP servers and skills (docs/mcp-and-skills.md). */
  extensions: ExtensionsConfig;
  /** The audit record (docs/access-and-limits.md "Audit"): HERMES_AUDIT_DAYS it is kept. */
  audit: { days: number };
}

export interface ExtensionsConfig {
  servers: McpServerConfig[];
  /** HERMES_SKILLS_DIR, resolved. */
  skillsDir: string;
  /** Skill name → pinned hash of its folder. */
  skillPins: Record<string, string>;
  /** The config file read (pins are written to and re-read from it); undefined when there is none. */
  configFile?: string;
  /** Values taken from the environment by `${NAME}` references (secrets, kept out of logs). */
  secrets: string[];
}

export interface TelemetryConfig {
  /** Where spans are POSTed (OTLP/HTTP, JSON): the traces endpoint, or the base endpoint + /v1/traces. */
  tracesUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  serviceName: string;
  /** HERMES_OTEL_CONTENT: prompts, completions, tool arguments and results on spans (redacted). */
  content: boolean;
}

/** run_code's wall-clock ceiling, whatever the model asks for (DESIGN: at most 300 s). */
export const MAX_CODE_TIMEOUT_MS = 300_000;

/** `warnings`: valid settings that will not take effect (e.g. a Slack secret without a bot token). */
export type ConfigResult = { ok: true; config: Config; warnings: string[] } | { ok: false; errors: string[] };

type Env = Record<string, string | undefined>;

// ── One zod object per area: the variables it reads → its part of Config. ────────────────
// To add a variable: one line in its area's object, one in that area's transform, one field in
// Config. A new area: one object here and one line in envSchema.

const modelEnv = z
  .object({
    OPENAI_API_KEY: text(),
    OPENAI_BASE_URL: httpUrl('https://api.openai.com/v1 or http://localhost:11434/v1'),
    HERMES_MODEL: text(),
    HERMES_TOOL_MODE: oneOf(['native', 'json'], 'native', 'use "native" (function calling) or "json" (for models without tool support).'),
    HERMES_TEMPERATURE: decimal(0.2, 0, 2),
    HERMES_MAX_TOKENS: wholeNumber(2048, { min: 1 }),
    HERMES_MODEL_TIMEOUT_MS: wholeNumber(60_000, { min: 1 }),
    HERMES_MODEL_RETRIES: wholeNumber(2, { min: 0 }),
    HERMES_STREAMING: oneOf(['on', 'off'], 'on', 'use "on" (answers appear as the model writes them) or "off" (each answer posted once it is complete).'),
    HERMES_EMBEDDING_MODEL: z.string().regex(/^[\x21-\x7e]{1,200}$/, { error: 'is not valid: the name of an embedding model the model server offers, e.g. text-embedding-3-small or nomic-embed-text (no spaces).' }).optional(),
  })
  .transform((e): Config['model'] => ({
    // A local server (base URL set) usually checks no key; the SDK still wants one.
    apiKey: e.OPENAI_API_KEY ?? (e.OPENAI_BASE_URL ? 'not-needed' : ''),
    baseURL: e.OPENAI_BASE_URL,
    name: e.HERMES_MODEL ?? 'gpt-4o-mini',
    temperature: e.HERMES_TEMPERATURE,
    maxTokens: e.HERMES_MAX_TOKENS,
    timeoutMs: e.HERMES_MODEL_TIMEOUT_MS,
    maxRetries: e.HERMES_MODEL_RETRIES,
    toolMode: e.HERMES_TOOL_MODE,
    streaming: e.HERMES_STREAMING === 'on',
    ...(e.HERMES_EMBEDDING_MODEL && { embeddingModel: e.HERMES_EMBEDDING_MODEL }),
  }));

const slackEnv = z
  .object({
    SLACK_BOT_TOKEN: text({ startsWith: 'xoxb-', fix: 'does not look like a bot token: use the "Bot User OAuth Token" (xoxb-…) from your Slack app\'s OAuth & Permissions page.' }),
    SLACK_SIGNING_SECRET: text(),
    SLACK_APP_TOKEN: text({ startsWith: 'xapp-', fix: 'does not look like an app-level token: create one with the connections:write scope (xapp-…) under Basic Information → App-Level Tokens.' }),
    SLACK_API_URL: httpUrl('https://slack.com/api/'),
  })
  .superRefine((e, ctx) => {
    if (e.SLACK_BOT_TOKEN !== undefined && e.SLACK_SIGNING_SECRET === undefined && e.SLACK_APP_TOKEN === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'SLACK_BOT_TOKEN is set but neither SLACK_SIGNING_SECRET (HTTP mode) nor SLACK_APP_TOKEN (Socket Mode) is: set one of them from your Slack app\'s Basic Information page.' });
    }
  }, { when: () => true })
  .transform((e): Config['slack'] =>
    e.SLACK_BOT_TOKEN === undefined ? undefined : { botToken: e.SLACK_BOT_TOKEN, signingSecret: e.SLACK_SIGNING_SECRET, appToken: e.SLACK_APP_TOKEN, apiUrl: e.SLACK_API_URL },
  );

const discordEnv = z
  .object({
    DISCORD_TOKEN: text(),
    DISCORD_API_URL: httpUrl('https://discord.com/api').refine((u) => u === undefined || !/\/v\d+\/?$/.test(u), {
      error: 'must not end in a version segment: use the base like https://discord.com/api (discord.js adds /v10).',
    }),
    DISCORD_GUILD_ID: z.string().regex(/^\d{1,20}$/, { error: 'is not a Discord id: copy the server id (digits) with Developer Mode on, or unset it.' }).optional(),
  })
  .transform((e): Config['discord'] =>
    e.DISCORD_TOKEN === undefined ? undefined : { token: e.DISCORD_TOKEN, apiUrl: e.DISCORD_API_URL, guildId: e.DISCORD_GUILD_ID },
  );

const stateEnv = (cwd: string) =>
  z
    .object({
      PORT: wholeNumber(3000, { min: 0, max: 65535, fix: 'is not a TCP port: use 1-65535 (default 3000; 0 picks a free one).' }),
      HERMES_DATA_DIR: text(),
      HERMES_STORE_URL: z
        .string()
        .regex(/^(sqlite:\/\/.+|postgres(ql)?:\/\/.+)$/, {
          error: 'is not supported: use postgres://user:password@host:5432/database (several instances) or sqlite:///path/to/file.sqlite; unset it to use HERMES_DATA_DIR/hermes.sqlite.',
        })
        .optional(),
      HERMES_FAILOVER_S: wholeNumber(15, { min: 2 }),
    })
    .transform((e): Pick<Config, 'port' | 'dataDir' | 'storeUrl' | 'failoverS'> => ({
      port: e.PORT,
      dataDir: path.resolve(cwd, e.HERMES_DATA_DIR ?? './data'),
      storeUrl: e.HERMES_STORE_URL,
      failoverS: e.HERMES_FAILOVER_S,
    }));

const limitsEnv = z
  .object({
    HERMES_MAX_STEPS: wholeNumber(10, { min: 1 }),
    HERMES_CONTEXT_TOKENS: wholeNumber(16_000, { min: 512 }),
    HERMES_TOOL_TIMEOUT_MS: wholeNumber(30_000, { min: 1 }),
    HERMES_APPROVAL_TTL_MS: wholeNumber(1_800_000, { min: 1 }),
    HERMES_MAX_CONCURRENT_TURNS: wholeNumber(64, { min: 1 }),
    HERMES_PROGRESS_DELAY_MS: wholeNumber(800, { min: 0 }),
    HERMES_THREAD_CONTEXT_MESSAGES: wholeNumber(50, { min: 0, max: 1000, fix: 'is not valid: use 0 (off) to 1000 (default 50).' }),
    HERMES_MAX_PARALLEL_AGENTS: wholeNumber(3, { min: 1, max: 16, fix: 'is not valid: sub-agents of one turn running at once, 1 to 16 (default 3).' }),
    HERMES_GROUNDING: oneOf(['retry', 'off'], 'retry', 'use "retry" (an answer stating figures no tool gave is checked once more, the default) or "off".'),
  })
  .transform((e): Config['limits'] => ({
    maxSteps: e.HERMES_MAX_STEPS,
    contextTokens: e.HERMES_CONTEXT_TOKENS,
    toolTimeoutMs: e.HERMES_TOOL_TIMEOUT_MS,
    approvalTtlMs: e.HERMES_APPROVAL_TTL_MS,
    maxConcurrentTurns: e.HERMES_MAX_CONCURRENT_TURNS,
    progressDelayMs: e.HERMES_PROGRESS_DELAY_MS,
    threadContextMessages: e.HERMES_THREAD_CONTEXT_MESSAGES,
    maxParallelAgents: e.HERMES_MAX_PARALLEL_AGENTS,
    grounding: e.HERMES_GROUNDING,
  }));

const schedulesEnv = z
  .object({
    HERMES_SCHEDULE_MIN_INTERVAL_S: wholeNumber(300, { min: 1 }),
    HERMES_SCHEDULE_GRACE_S: wholeNumber(3600, { min: 0 }),
    HERMES_MAX_SCHEDULES_PER_USER: wholeNumber(20, { min: 1 }),
  })
  .transform((e): Config['schedules'] => ({
    minIntervalS: e.HERMES_SCHEDULE_MIN_INTERVAL_S,
    graceS: e.HERMES_SCHEDULE_GRACE_S,
    maxPerUser: e.HERMES_MAX_SCHEDULES_PER_USER,
  }));

const filesEnv = (cwd: string) =>
  z
    .object({
      HERMES_DATA_DIR: text(),
      HERMES_WORKSPACE_DIR: text(),
      HERMES_WORKSPACE_MB: wholeNumber(200, { min: 1 }),
      HERMES_MAX_FILE_MB: wholeNumber(25, { min: 1 }),
      HERMES_CODE_TIMEOUT_MS: wholeNumber(60_000, {
        min: 1000,
        max: MAX_CODE_TIMEOUT_MS,
        fix: `is not valid: run_code runs at most ${MAX_CODE_TIMEOUT_MS} ms (5 min); set 1000-${MAX_CODE_TIMEOUT_MS} (default 60000), or unset it.`,
      }),
      HERMES_CODE_MEMORY_MB: wholeNumber(512, { min: 16 }),
    })
    .transform((e): Config['files'] => ({
      workspaceDir: path.resolve(cwd, e.HERMES_WORKSPACE_DIR ?? path.join(path.resolve(cwd, e.HERMES_DATA_DIR ?? './data'), 'workspaces')),
      workspaceMb: e.HERMES_WORKSPACE_MB,
      maxFileMb: e.HERMES_MAX_FILE_MB,
      codeTimeoutMs: e.HERMES_CODE_TIMEOUT_MS,
      codeMemoryMb: e.HERMES_CODE_MEMORY_MB,
    }));

const visionEnv = z
  .object({
    HERMES_VISION: oneOf(['auto', 'on', 'off'], 'auto', 'use "auto" (ask the model server once whether the model takes images), "on" or "off".'),
    HERMES_MAX_IMAGE_MB: wholeNumber(5, { min: 1, max: 20, fix: 'is not valid: the largest image shown to the model, in MB, a whole number from 1 to 20 (default 5).' }),
  })
  .transform((e): Config['vision'] => ({ mode: e.HERMES_VISION, maxImageBytes: e.HERMES_MAX_IMAGE_MB * 1024 * 1024 }));

const accessEnv = z
  .object({
    HERMES_ADMINS: commaList(/^(slack|discord|shell):[^:\s]+$/, 'use platform:userid, e.g. slack:U0123ABC or discord:123456789012345678.'),
    HERMES_NET_ALLOW: commaList(/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/, 'use host or host:port, e.g. intranet.local:8080 or 127.0.0.1:9000.', (s) => s.toLowerCase()),
    // Read by the web_search tool (tools/index.ts); checked here so a typo stops the start.
    HERMES_SEARXNG_URL: httpUrl('http://searxng.internal:8080'),
  })
  .transform((e): Pick<Config, 'admins' | 'netAllow'> => ({ admins: e.HERMES_ADMINS, netAllow: e.HERMES_NET_ALLOW }));

const usageEnv = z
  .object({
    HERMES_ALLOW: commaList(ALLOW_ENTRY, ALLOW_ENTRY_FIX),
    HERMES_USER_RATE: wholeNumber(20, { min: 0, fix: 'is not valid: messages per minute per person, a whole number (default 20; 0 = no limit).' }),
    HERMES_USER_DAILY_TOKENS: wholeNumber(0, { min: 0, fix: 'is not valid: tokens per person per UTC day, a whole number (default 0 = no limit).' }),
    HERMES_DAILY_TOKENS: wholeNumber(0, { min: 0, fix: 'is not valid: tokens per UTC day for the whole bot, a whole number (default 0 = no limit).' }),
  })
  .transform((e): Config['usage'] => ({ allow: e.HERMES_ALLOW.map(toAllowRule), ratePerMinute: e.HERMES_USER_RATE, dailyTokens: e.HERMES_USER_DAILY_TOKENS, botDailyTokens: e.HERMES_DAILY_TOKENS }));

const miscEnv = z
  .object({
    HERMES_TIMEZONE: timeZone('UTC'),
    LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info', 'use one of fatal, error, warn, info, debug, trace, silent.'),
    HERMES_BUSY_MODE: oneOf(BUSY_MODES, DEFAULT_BUSY_MODE, 'use "steer" (a message sent while a task runs is added to it, the default), "queue" (it waits for its own turn) or "interrupt" (it stops the running task and starts its own).'),
  })
  .transform((e): Pick<Config, 'timezone' | 'logLevel' | 'busyMode'> => ({ timezone: e.HERMES_TIMEZONE, logLevel: e.LOG_LEVEL, busyMode: e.HERMES_BUSY_MODE }));

const auditEnv = z
  .object({
    HERMES_AUDIT_DAYS: wholeNumber(365, { min: 1, max: 36_500, fix: 'is not valid: days the audit record is kept, a whole number from 1 to 36500 (default 365).' }),
  })
  .transform((e): Config['audit'] => ({ days: e.HERMES_AUDIT_DAYS }));

const extensionsEnv = (cwd: string) =>
  z
    .object({ HERMES_SKILLS_DIR: text() })
    .transform((e) => ({ skillsDir: path.resolve(cwd, e.HERMES_SKILLS_DIR ?? './skills') }));

const telemetryEnv = z
  .object({
    OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl('http://localhost:4318 (the collector\'s OTLP/HTTP port; /v1/traces is added)'),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl('http://localhost:4318/v1/traces (used as written)'),
    OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders(),
    OTEL_EXPORTER_OTLP_TIMEOUT: wholeNumber(10_000, { min: 1, fix: 'is not valid: milliseconds one export may take, a whole number >= 1 (default 10000).' }),
    OTEL_SERVICE_NAME: text(),
    HERMES_OTEL_CONTENT: oneOf(['true', 'false'], 'false', 'use "true" (prompts, completions and tool arguments and results on spans, redacted) or "false" (default).'),
  })
  .transform((e): Config['telemetry'] => {
    const tracesUrl = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT && `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
    if (!tracesUrl) return undefined;
    return { tracesUrl, headers: e.OTEL_EXPORTER_OTLP_HEADERS, timeoutMs: e.OTEL_EXPORTER_OTLP_TIMEOUT, serviceName: e.OTEL_SERVICE_NAME ?? 'hermes-agent', content: e.HERMES_OTEL_CONTENT === 'true' };
  });

/** Every area reads the same environment; their parts make one Config (tools come from the file). */
const envSchema = (cwd: string) =>
  z
    .object({
      model: modelEnv,
      slack: slackEnv,
      discord: discordEnv,
      state: stateEnv(cwd),
      limits: limitsEnv,
      schedules: schedulesEnv,
      files: filesEnv(cwd),
      vision: visionEnv,
      access: accessEnv,
      usage: usageEnv,
      misc: miscEnv,
      dashboard: dashboardEnv(cwd),
      telemetry: telemetryEnv,
      extensions: extensionsEnv(cwd),
      audit: auditEnv,
    })
    .transform(({ state, access, misc, telemetry, extensions, ...rest }) => ({ config: { ...rest, ...state, ...access, ...misc, ...(telemetry && { telemetry }) } satisfies Omit<Config, 'tools' | 'agents' | 'extensions' | 'slackAssistant' | 'channels'>, extensions }));

/** Reads and validates the environment (and the optional config file). Pure apart from reading that file. */
export function loadConfig(env: Env, cwd = process.cwd()): ConfigResult {
  const present = presentValues(env);
  const schema = envSchema(cwd);
  const perArea = Object.fromEntries(Object.keys(schema.in.shape).map((area) => [area, present]));
  const parsed = schema.safeParse(perArea, { reportInput: true });
  // Issue paths start with the area; the line names the variable only.
  const errors = parsed.success ? [] : parsed.error.issues.map((i) => formatIssue({ ...i, path: i.path.slice(1) }, present, redactSecrets));

  const configFile = present.HERMES_CONFIG ? path.resolve(cwd, present.HERMES_CONFIG) : firstExisting(cwd);
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

/** Names read outside the zod areas: the config file's path. */
const READ_ELSEWHERE = ['HERMES_CONFIG'];

/** Every variable the bot reads: the keys of each area's zod object, and the few read elsewhere. */
export function knownEnvNames(): string[] {
  const keys = (schema: unknown): string[] => {
    const s = schema as { shape?: Record<string, unknown>; in?: unknown };
    if (s.shape) return Object.keys(s.shape);
    return s.in ? keys(s.in) : [];
  };
  const areas: Record<string, unknown> = envSchema('.').in.shape;
  return [...new Set([...Object.values(areas).flatMap(keys), ...READ_ELSEWHERE])];
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

function firstExisting(cwd: string): string | undefined {
  for (const name of ['hermes.config.yaml', 'hermes.config.yml', 'hermes.config.json']) {
    const p = path.join(cwd, name);
    if (existsSync(p)) return p;
  }
  return undefined;
}

// The YAML parser loads only when there is a YAML file to read (most setups have none).
const parseYaml = (text: string): unknown => (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

/**
 * The config file read again while the bot runs (SIGHUP, a change of the file): the whole file is
 * checked as at start, so a reload never takes half a file. Errors are the same lines a start prints.
 */
export function rereadConfigFile(file: string): { ok: true; file: ConfigFile } | { ok: false; errors: string[] } {
  // An empty file while running is a write caught half-way (or a mistake), not "no policies": it
  // would open every channel. `{}` says "nothing configured" on purpose.
  try {
    if (readFileSync(file, 'utf8').trim() === '') return { ok: false, errors: [`${path.basename(file)} is empty (caught while being written?); write {} for a file with nothing in it.`] };
  } catch {
    // Unreadable: readConfigFile below says why.
  }
  const errors: string[] = [];
  const read = readConfigFile(file, errors);
  return read && errors.length === 0 ? { ok: true, file: read } : { ok: false, errors: errors.length ? errors : [`${file} could not be read`] };
}

function readConfigFile(file: string | undefined, errors: string[]): z.infer<typeof fileSchema> | undefined {
  if (!file) return undefined;
  let raw: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    raw = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    errors.push(`HERMES_CONFIG file ${file} could not be read: ${(err as Error).message.split('\n')[0]}; fix the file or set HERMES_CONFIG to another path.`);
    return undefined;
  }
  const parsed = fileSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const doc =
        issue.path[0] === 'agents' ? 'docs/sub-agents.md "Agent profiles"'
        : issue.path[0] === 'mcp_servers' || issue.path[0] === 'skills' ? 'docs/mcp-and-skills.md'
        : issue.path[0] === 'channels' ? 'docs/access-and-limits.md "Channel policies"'
        : issue.path[0] === 'slack' ? 'docs/slack.md "Assistant threads"'
        : 'docs/tools.md "Per-tool settings"';
      // A bad record key (zod: "Invalid key in record") carries the key rule's own message inside.
      const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
      errors.push(`${path.basename(file)}: ${issue.path.join('.') || '(root)'}: ${message}; see ${doc} for the allowed keys.`);
    }
    return undefined;
  }
  return parsed.data;
}

/** Tool settings from the environment (BRAVE_API_KEY…) merged under the config file's, file values winning. */
export function mergeToolSettings(fromFile: Config['tools'], fromEnv: Record<string, Record<string, unknown>>): Config['tools'] {
  const out: Config['tools'] = { ...fromFile };
  for (const [name, settings] of Object.entries(fromEnv)) {
    out[name] = { ...(out[name] ?? {}), settings: { ...settings, ...(out[name]?.settings ?? {}) } };
  }
  return out;
}

/**
 * The configured secrets, which logs, traces and the dashboard replace verbatim whatever their
 * shape. Every credential the settings can hold belongs here: a random key of no known shape
 * (BRAVE_API_KEY) reached the log in clear while this list named only the model, Slack, Discord,
 * dashboard and OTLP credentials. Tool settings count by name (…key, …token, …secret, …password),
 * wherever they came from (env or the config file), and so does the password in HERMES_STORE_URL.
 */
export function secretValues(config: Config): string[] {
  // OTLP headers carry the collector's credentials (an API key, a Basic header).
  const all = [
    config.model.apiKey,
    config.slack?.botToken,
    config.slack?.signingSecret,
    config.slack?.appToken,
    config.discord?.token,
    config.dashboard?.token,
    ...Object.values(config.telemetry?.headers ?? {}),
    urlPassword(config.storeUrl),
    ...Object.values(config.tools).flatMap((t) => secretSettings(t.settings)),
    ...config.extensions.secrets,
  ];
  return [...new Set(all.filter((s): s is string => s !== undefined && s !== '' && s !== 'not-needed'))];
}

const SECRET_SETTING = /(?:key|token|secret|password|passwd|credential)s?$/i;

function secretSettings(settings: Record<string, unknown> | undefined): string[] {
  return Object.entries(settings ?? {}).flatMap(([name, value]) => (SECRET_SETTING.test(name) && typeof value === 'string' ? [value] : []));
}

function urlPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}

/** `slack:U1` style id for a speaker, as HERMES_ADMINS lists them. */
export function isAdmin(config: Pick<Config, 'admins'>, platform: string, userId: string): boolean {
  return config.admins.includes(`${platform}:${userId}`);
}
