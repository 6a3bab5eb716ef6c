import type { AllowRule } from './allow-rules.js';
import type { DashboardConfig } from './dashboard-config.js';
import type { AgentProfiles } from './agent-profiles.js';
import type { McpServerConfig } from './mcp-servers.js';
import type { ChannelsFile } from './channel-policies.js';
import type { SuggestedPrompt } from './slack-file.js';
import type { BusyMode } from './busy-mode.js';
import type { ToolSettings } from './config-file.js';

/**
 * Every setting, as the running bot reads it: one typed object made once at start by loadConfig
 * (load-config.ts) from the environment (env-schema.ts) and the optional config file
 * (config-file.ts). Parts take the slice they need (`Pick<Config, …>`), never the environment.
 */

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

