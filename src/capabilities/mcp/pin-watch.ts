import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mcpServersFileSchema, skillsFileSchema } from '../../settings/mcp-servers.js';

/**
 * A re-pin takes effect without a restart: when the config file changes (src/settings/config-watch.ts,
 * and SIGHUP — the reload in src/app/config-reload.ts), the pins are read again:
 * `mcp_servers.<name>.pin` and `skills.<name>.pin`. A file that no longer parses keeps the pins in
 * force and says so.
 */

// Loaded only when the file changes: a start without MCP servers or skills never needs it.
const parseYaml = (text: string): unknown => (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

export interface Pins {
  servers: Map<string, Record<string, string> | undefined>;
  skills: Record<string, string>;
}

export function readPins(file: string): Pins {
  const text = readFileSync(file, 'utf8');
  // An empty file is a write caught half-way (the reload rejects it too): it must not unpin every server.
  if (text.trim() === '') throw new Error('the file is empty');
  const raw = (file.endsWith('.json') ? JSON.parse(text) : parseYaml(text)) as Record<string, unknown> | null;
  const servers = mcpServersFileSchema.safeParse(raw?.mcp_servers ?? {});
  const skills = skillsFileSchema.safeParse(raw?.skills ?? {});
  if (!servers.success || !skills.success) throw new Error((servers.error ?? skills.error)!.issues[0]!.message);
  return {
    servers: new Map(Object.entries(servers.data).map(([name, s]) => [name, s.pin])),
    skills: Object.fromEntries(Object.entries(skills.data).flatMap(([name, s]) => (s.pin ? [[name, s.pin]] : []))),
  };
}
