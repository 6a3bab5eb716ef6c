import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import { mcpServersFileSchema, skillsFileSchema } from '../../settings/mcp-servers.js';

/**
 * A re-pin takes effect without a restart: the config file is watched (stat polling, which also
 * works on bind mounts and editors that replace the file), and on a change only the pins are read
 * again: `mcp_servers.<name>.pin` and `skills.<name>.pin`. Anything else in the file needs a
 * restart (or the config reload, where there is one). A file that no longer parses keeps the pins
 * in force and says so.
 */

// Loaded only when the file changes: a start without MCP servers or skills never needs it.
const parseYaml = (text: string): unknown => (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

export interface Pins {
  servers: Map<string, Record<string, string> | undefined>;
  skills: Record<string, string>;
}

export function readPins(file: string): Pins {
  const text = readFileSync(file, 'utf8');
  const raw = (file.endsWith('.json') ? JSON.parse(text) : parseYaml(text)) as Record<string, unknown> | null;
  const servers = mcpServersFileSchema.safeParse(raw?.mcp_servers ?? {});
  const skills = skillsFileSchema.safeParse(raw?.skills ?? {});
  if (!servers.success || !skills.success) throw new Error((servers.error ?? skills.error)!.issues[0]!.message);
  return {
    servers: new Map(Object.entries(servers.data).map(([name, s]) => [name, s.pin])),
    skills: Object.fromEntries(Object.entries(skills.data).flatMap(([name, s]) => (s.pin ? [[name, s.pin]] : []))),
  };
}

export function watchPins(file: string, opts: { log: Pick<Logger, 'warn'>; intervalMs?: number; onPins(pins: Pins): void }): () => void {
  const listener = (cur: { mtimeMs: number }, prev: { mtimeMs: number }) => {
    if (cur.mtimeMs === prev.mtimeMs) return;
    try {
      opts.onPins(readPins(file));
    } catch (err) {
      opts.log.warn({ file, err: (err as Error).message.split('\n')[0] }, 'config file changed but could not be read: the pins in force stay');
    }
  };
  watchFile(file, { interval: opts.intervalMs ?? 1000, persistent: false }, listener);
  return () => unwatchFile(file, listener);
}
