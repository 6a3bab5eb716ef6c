import * as z from 'zod';

/**
 * The `mcp_servers:` and `skills:` sections of hermes.config.yaml (docs/mcp-and-skills.md).
 *
 * A server is either a command the bot starts (stdio) or a URL it connects to (streamable HTTP).
 * Values of `env` and `headers` may say `${NAME}` to take a variable from the bot's environment, so
 * a token never has to be written into the file; a reference to a variable that is not set stops
 * the start (a server that would connect without its credentials fails in confusing ways later).
 */

export const SERVER_NAME = /^[a-z0-9-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A pin is a per-tool map of definition hashes (see definition-hash.ts). */
const PIN_HASH = /^[A-Za-z0-9_-]{43}$/;
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

const patterns = z.array(z.string().min(1).max(200)).max(200);

const serverSchema = z
  .object({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).max(100).optional(),
    env: z.record(z.string().regex(ENV_NAME, { error: 'environment variable names use letters, digits and _' }), z.string()).optional(),
    cwd: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL like https://mcp.example.com/mcp' }).optional(),
    headers: z.record(z.string().min(1), z.string()).optional(),
    tools: z.object({ allow: patterns.optional(), deny: patterns.optional() }).strict().optional(),
    approval: z.record(z.string().min(1), z.enum(['always', 'never'])).optional(),
    timeout_ms: z.number().int().min(100).max(3_600_000).optional(),
    pin: z.record(z.string().min(1), z.string().regex(PIN_HASH, { error: 'is not a pin hash: run `npm run mcp -- pin` to write it' })).optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give either command (a server the bot starts, stdio) or url (streamable HTTP), not both or neither' });
    }
    if (s.url !== undefined) {
      for (const key of ['args', 'env', 'cwd'] as const) {
        if (s[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is for servers the bot starts (command); a url server takes headers` });
      }
    }
    if (s.command !== undefined && s.headers !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'headers are for url servers; a command server takes env' });
    }
  });

export const mcpServersFileSchema = z.record(z.string().regex(SERVER_NAME, { error: 'server names use lowercase letters, digits and -' }).max(40), serverSchema);

/** `skills:` maps a skill name to its pin (the hash of its folder's files). */
export const skillsFileSchema = z.record(
  z.string().min(1).max(64),
  z.object({ pin: z.string().regex(PIN_HASH, { error: 'is not a pin hash: run `npm run mcp -- pin-skills` to write it' }).optional() }).strict(),
);

export type McpTransportConfig =
  | { kind: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { kind: 'http'; url: string; headers: Record<string, string> };

export interface McpServerConfig {
  name: string;
  transport: McpTransportConfig;
  tools: { allow?: string[]; deny?: string[] };
  approval: Record<string, 'always' | 'never'>;
  timeoutMs: number;
  /** Tool name → hash of its definition; undefined = not pinned. */
  pin?: Record<string, string>;
}

export interface McpServersResult {
  servers: McpServerConfig[];
  /** Values taken from the environment through `${NAME}`: treated as secrets (never logged). */
  secrets: string[];
  errors: string[];
}

/** Validated `mcp_servers:` → servers with `${NAME}` references filled in from `env`. */
export function resolveMcpServers(file: z.infer<typeof mcpServersFileSchema> | undefined, env: Record<string, string | undefined>, cwd: string): McpServersResult {
  const servers: McpServerConfig[] = [];
  const secrets: string[] = [];
  const errors: string[] = [];
  for (const [name, s] of Object.entries(file ?? {})) {
    const fill = (where: string, values: Record<string, string> | undefined): Record<string, string> => {
      const out: Record<string, string> = {};
      for (const [key, value] of Object.entries(values ?? {})) {
        out[key] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, ref: string) => {
          const v = env[ref];
          if (v === undefined || v === '') {
            errors.push(`mcp_servers.${name}.${where}.${key} uses \${${ref}}, which is not set: set ${ref} in the environment (or .env), or remove the reference.`);
            return '';
          }
          secrets.push(v);
          return v;
        });
      }
      return out;
    };
    const transport: McpTransportConfig =
      s.command !== undefined
        ? { kind: 'stdio', command: s.command, args: s.args ?? [], env: fill('env', s.env), ...(s.cwd !== undefined && { cwd: resolvePath(cwd, s.cwd) }) }
        : { kind: 'http', url: s.url!, headers: fill('headers', s.headers) };
    servers.push({
      name,
      transport,
      tools: { ...(s.tools?.allow && { allow: s.tools.allow }), ...(s.tools?.deny && { deny: s.tools.deny }) },
      approval: s.approval ?? {},
      timeoutMs: s.timeout_ms ?? DEFAULT_MCP_TIMEOUT_MS,
      ...(s.pin && { pin: s.pin }),
    });
  }
  return { servers, secrets, errors };
}

function resolvePath(cwd: string, p: string): string {
  return p.startsWith('/') ? p : `${cwd.replace(/\/+$/, '')}/${p}`;
}
