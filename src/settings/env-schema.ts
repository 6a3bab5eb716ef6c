import path from 'node:path';
import * as z from 'zod';
import { commaList, decimal, httpUrl, oneOf, otlpHeaders, text, timeZone, wholeNumber } from './config-env.js';
import { ALLOW_ENTRY, ALLOW_ENTRY_FIX, toAllowRule } from './allow-rules.js';
import { dashboardEnv } from './dashboard-config.js';
import { BUSY_MODES, DEFAULT_BUSY_MODE } from './busy-mode.js';
import { MAX_CODE_TIMEOUT_MS, type Config } from './config.js';

/**
 * What the bot reads from the environment, and how each variable becomes its part of Config. A bad
 * value is a zod issue whose message is the fix; load-config.ts turns each into one line.
 */

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
export const envSchema = (cwd: string) =>
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
