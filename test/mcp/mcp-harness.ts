import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { systemClock } from '../../src/basics/clock.js';
import { createMcpHub, type HubOptions, type McpHub } from '../../src/capabilities/mcp/mcp-hub.js';
import type { McpServerConfig } from '../../src/settings/mcp-servers.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { ToolExecutor } from '../../src/capabilities/toolkit/executor.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const STDIO_SERVER = path.join(ROOT, 'test/fakes/mcp/stdio-server.ts');

/** A stdio server entry running the fake MCP server in a child process, reporting into `dir`. */
export function stdioServer(name: string, dir: string, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return {
    name,
    transport: { kind: 'stdio', command: process.execPath, args: ['--import', 'tsx', STDIO_SERVER], env: { FAKE_MCP_DIR: dir }, cwd: ROOT },
    tools: {},
    approval: {},
    timeoutMs: 20_000,
    ...extra,
  };
}

export function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hermes-mcp-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function events(dir: string): string[] {
  const file = path.join(dir, 'events.log');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** A hub on a fresh registry, with `until(cond)` resolving at the first change after which cond holds. */
export function hubHarness(servers: McpServerConfig[], extra: Partial<HubOptions> = {}) {
  const registry = new ToolRegistry({});
  const executor = new ToolExecutor({ registry, defaultTimeoutMs: 30_000 });
  const waiters = new Set<() => void>();
  const hub: McpHub = createMcpHub({
    servers,
    registry,
    clock: systemClock,
    log: pino({ level: 'silent' }),
    connection: { baseDelayMs: 50, maxDelayMs: 200, env: { PATH: process.env.PATH, OPENAI_API_KEY: 'sk-test-secret-should-not-leak', SLACK_BOT_TOKEN: 'xoxb-secret' } },
    onChange: () => {
      for (const w of [...waiters]) w();
    },
    ...extra,
  });
  const until = (cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> =>
    new Promise((resolve, reject) => {
      if (cond()) return resolve();
      const timer = setTimeout(() => (waiters.delete(check), reject(new Error(`timed out waiting for ${what}`))), timeoutMs);
      const check = () => {
        if (!cond()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
    });
  return { hub, registry, executor, until };
}
