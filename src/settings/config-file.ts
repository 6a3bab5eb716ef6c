import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as z from 'zod';
import { agentsFileSchema } from './agent-profiles.js';
import { mcpServersFileSchema, skillsFileSchema } from './mcp-servers.js';
import { channelsFileSchema } from './channel-policies.js';
import { slackFileSchema } from './slack-file.js';

/**
 * The optional hermes.config.yaml|json: per-tool settings, sub-agent profiles, MCP servers, skill
 * pins, channel policies and the Slack assistant's prompts. Read at start (load-config.ts) and again
 * on SIGHUP or a change of the file (rereadConfigFile); either way the whole file is checked, and
 * every problem is one line naming the key and the doc that lists the allowed ones.
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

/** HERMES_CONFIG when set, else the first hermes.config.* in `cwd`; undefined when there is none. */
export function configFilePath(env: Record<string, string>, cwd: string): string | undefined {
  return env.HERMES_CONFIG ? path.resolve(cwd, env.HERMES_CONFIG) : firstExisting(cwd);
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

/** The file checked whole (undefined when there is none or it fails); each problem is one line pushed to `errors`. */
export function readConfigFile(file: string | undefined, errors: string[]): ConfigFile | undefined {
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
export function mergeToolSettings(fromFile: Record<string, ToolSettings>, fromEnv: Record<string, Record<string, unknown>>): Record<string, ToolSettings> {
  const out: Record<string, ToolSettings> = { ...fromFile };
  for (const [name, settings] of Object.entries(fromEnv)) {
    out[name] = { ...(out[name] ?? {}), settings: { ...settings, ...(out[name]?.settings ?? {}) } };
  }
  return out;
}
