import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

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
  })
  .strict();

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
  };
  slack?: { botToken: string; signingSecret?: string; appToken?: string; apiUrl?: string };
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
  };
  /** Scheduled tasks: shortest interval, how late a missed run may still run, active ones per user. */
  schedules: { minIntervalS: number; graceS: number; maxPerUser: number };
  /** `slack:U123`, `discord:456` … */
  admins: string[];
  /** `host` or `host:port` entries the operator explicitly allows. */
  netAllow: string[];
  timezone: string;
  logLevel: string;
  tools: Record<string, ToolSettings>;
}

/** `warnings`: valid settings that will not take effect (e.g. a Slack secret without a bot token). */
export type ConfigResult = { ok: true; config: Config; warnings: string[] } | { ok: false; errors: string[] };

type Env = Record<string, string | undefined>;

const intVar = (name: string, min: number, fallback: number) => ({ name, min, fallback });

/** Reads and validates the environment (and the optional config file). Pure apart from reading that file. */
export function loadConfig(env: Env, cwd = process.cwd()): ConfigResult {
  const errors: string[] = [];
  const warnings: string[] = [];
  const get = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };

  const int = ({ name, min, fallback }: ReturnType<typeof intVar>): number => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min) {
      errors.push(`${name}=${JSON.stringify(raw)} is not valid: set it to a whole number >= ${min} (default ${fallback}), or unset it.`);
      return fallback;
    }
    return Number(raw);
  };

  const url = (name: string, example: string): string | undefined => {
    const raw = get(name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
      return raw;
    } catch {
      errors.push(`${name}=${JSON.stringify(raw)} is not an http(s) URL: set it like ${example}, or unset it.`);
      return undefined;
    }
  };

  const baseURL = url('OPENAI_BASE_URL', 'https://api.openai.com/v1 or http://localhost:11434/v1');
  const apiKey = get('OPENAI_API_KEY') ?? (baseURL ? 'not-needed' : '');
  const toolModeRaw = get('HERMES_TOOL_MODE') ?? 'native';
  if (toolModeRaw !== 'native' && toolModeRaw !== 'json') {
    errors.push(`HERMES_TOOL_MODE=${JSON.stringify(toolModeRaw)} is not valid: use "native" (function calling) or "json" (for models without tool support).`);
  }
  const temperatureRaw = get('HERMES_TEMPERATURE');
  let temperature = 0.2;
  if (temperatureRaw !== undefined) {
    const t = Number(temperatureRaw);
    if (!Number.isFinite(t) || t < 0 || t > 2) errors.push(`HERMES_TEMPERATURE=${JSON.stringify(temperatureRaw)} is not valid: use a number from 0 to 2 (default 0.2).`);
    else temperature = t;
  }

  // Slack
  const slackBot = get('SLACK_BOT_TOKEN');
  const slackSecret = get('SLACK_SIGNING_SECRET');
  const slackApp = get('SLACK_APP_TOKEN');
  const slackApiUrl = url('SLACK_API_URL', 'https://slack.com/api/');
  let slack: Config['slack'];
  if (slackBot !== undefined) {
    if (!slackBot.startsWith('xoxb-')) errors.push('SLACK_BOT_TOKEN does not look like a bot token: use the "Bot User OAuth Token" (xoxb-…) from your Slack app\'s OAuth & Permissions page.');
    if (slackSecret === undefined && slackApp === undefined) {
      errors.push('SLACK_BOT_TOKEN is set but neither SLACK_SIGNING_SECRET (HTTP mode) nor SLACK_APP_TOKEN (Socket Mode) is: set one of them from your Slack app\'s Basic Information page.');
    }
    slack = { botToken: slackBot, signingSecret: slackSecret, appToken: slackApp, apiUrl: slackApiUrl };
  } else if (slackSecret !== undefined || slackApp !== undefined) {
    warnings.push('SLACK_SIGNING_SECRET or SLACK_APP_TOKEN is set without SLACK_BOT_TOKEN, so Slack stays off: set SLACK_BOT_TOKEN (xoxb-…) to turn it on.');
  }
  if (slackApp !== undefined && !slackApp.startsWith('xapp-')) {
    errors.push('SLACK_APP_TOKEN does not look like an app-level token: create one with the connections:write scope (xapp-…) under Basic Information → App-Level Tokens.');
  }

  // Discord
  const discordToken = get('DISCORD_TOKEN');
  const discordApiUrl = url('DISCORD_API_URL', 'https://discord.com/api');
  const discordGuild = get('DISCORD_GUILD_ID');
  if (discordGuild !== undefined && !/^\d{1,20}$/.test(discordGuild)) {
    errors.push(`DISCORD_GUILD_ID=${JSON.stringify(discordGuild)} is not a Discord id: copy the server id (digits) with Developer Mode on, or unset it.`);
  }
  if (discordApiUrl !== undefined && /\/v\d+\/?$/.test(discordApiUrl)) {
    errors.push('DISCORD_API_URL must not end in a version segment: use the base like https://discord.com/api (discord.js adds /v10).');
  }
  let discord: Config['discord'];
  if (discordToken !== undefined) discord = { token: discordToken, apiUrl: discordApiUrl, guildId: discordGuild };
  else if (discordGuild !== undefined || discordApiUrl !== undefined) {
    warnings.push('DISCORD_GUILD_ID or DISCORD_API_URL is set without DISCORD_TOKEN, so Discord stays off: set DISCORD_TOKEN to turn it on.');
  }

  const admins = (get('HERMES_ADMINS') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const a of admins) {
    if (!/^(slack|discord|shell):[^:\s]+$/.test(a)) {
      errors.push(`HERMES_ADMINS entry ${JSON.stringify(a)} is not valid: use platform:userid, e.g. slack:U0123ABC or discord:123456789012345678.`);
    }
  }

  const netAllow = (get('HERMES_NET_ALLOW') ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  for (const h of netAllow) {
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(h)) {
      errors.push(`HERMES_NET_ALLOW entry ${JSON.stringify(h)} is not valid: use host or host:port, e.g. intranet.local:8080 or 127.0.0.1:9000.`);
    }
  }

  const timezone = get('HERMES_TIMEZONE') ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    errors.push(`HERMES_TIMEZONE=${JSON.stringify(timezone)} is not an IANA time zone: use a name like Europe/Berlin or UTC.`);
  }

  const logLevel = get('LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    errors.push(`LOG_LEVEL=${JSON.stringify(logLevel)} is not valid: use one of fatal, error, warn, info, debug, trace, silent.`);
  }

  const storeUrl = get('HERMES_STORE_URL');
  if (storeUrl !== undefined && !/^(sqlite:\/\/.+|postgres(ql)?:\/\/.+)$/.test(storeUrl)) {
    errors.push(`HERMES_STORE_URL is not supported: use postgres://user:password@host:5432/database (several instances) or sqlite:///path/to/file.sqlite; unset it to use HERMES_DATA_DIR/hermes.sqlite.`);
  }

  const config: Config = {
    model: {
      apiKey,
      baseURL,
      name: get('HERMES_MODEL') ?? 'gpt-4o-mini',
      temperature,
      maxTokens: int(intVar('HERMES_MAX_TOKENS', 1, 2048)),
      timeoutMs: int(intVar('HERMES_MODEL_TIMEOUT_MS', 1, 60_000)),
      maxRetries: int(intVar('HERMES_MODEL_RETRIES', 0, 2)),
      toolMode: toolModeRaw === 'json' ? 'json' : 'native',
    },
    slack,
    discord,
    port: int(intVar('PORT', 0, 3000)),
    dataDir: path.resolve(cwd, get('HERMES_DATA_DIR') ?? './data'),
    storeUrl,
    failoverS: int(intVar('HERMES_FAILOVER_S', 2, 15)),
    limits: {
      maxSteps: int(intVar('HERMES_MAX_STEPS', 1, 10)),
      contextTokens: int(intVar('HERMES_CONTEXT_TOKENS', 512, 16_000)),
      toolTimeoutMs: int(intVar('HERMES_TOOL_TIMEOUT_MS', 1, 30_000)),
      approvalTtlMs: int(intVar('HERMES_APPROVAL_TTL_MS', 1, 1_800_000)),
      maxConcurrentTurns: int(intVar('HERMES_MAX_CONCURRENT_TURNS', 1, 64)),
      progressDelayMs: int(intVar('HERMES_PROGRESS_DELAY_MS', 0, 800)),
      threadContextMessages: int(intVar('HERMES_THREAD_CONTEXT_MESSAGES', 0, 50)),
    },
    schedules: {
      minIntervalS: int(intVar('HERMES_SCHEDULE_MIN_INTERVAL_S', 1, 300)),
      graceS: int(intVar('HERMES_SCHEDULE_GRACE_S', 0, 3600)),
      maxPerUser: int(intVar('HERMES_MAX_SCHEDULES_PER_USER', 1, 20)),
    },
    admins,
    netAllow,
    timezone,
    logLevel,
    tools: {},
  };
  if (config.limits.threadContextMessages > 1000) {
    errors.push(`HERMES_THREAD_CONTEXT_MESSAGES=${config.limits.threadContextMessages} is too large: use 0 (off) to 1000 (default 50).`);
  }
  if (config.port > 65535) errors.push(`PORT=${config.port} is not a TCP port: use 1-65535 (default 3000).`);

  const file = readConfigFile(get('HERMES_CONFIG') ?? firstExisting(cwd), errors);
  if (file?.tools) config.tools = file.tools;

  return errors.length ? { ok: false, errors } : { ok: true, config, warnings };
}

function firstExisting(cwd: string): string | undefined {
  for (const name of ['hermes.config.yaml', 'hermes.config.yml', 'hermes.config.json']) {
    const p = path.join(cwd, name);
    if (existsSync(p)) return p;
  }
  return undefined;
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
      errors.push(`${path.basename(file)}: ${issue.path.join('.') || '(root)'}: ${issue.message}; see README "Tool settings" for the allowed keys.`);
    }
    return undefined;
  }
  return parsed.data;
}

/** `slack:U1` style id for a speaker, as HERMES_ADMINS lists them. */
export function isAdmin(config: Pick<Config, 'admins'>, platform: string, userId: string): boolean {
  return config.admins.includes(`${platform}:${userId}`);
}
