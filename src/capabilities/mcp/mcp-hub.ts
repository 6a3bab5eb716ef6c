import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { Clock } from '../../basics/clock.js';
import type { ToolRegistry } from '../toolkit/registry.js';
import type { McpServerConfig } from '../../settings/mcp-servers.js';
import { connectMcpServer, type ConnectionOptions, type McpConnection } from './mcp-connection.js';
import { mcpTool } from './mcp-tool.js';
import { definitionHash, mcpToolName, toolAllowed } from './tool-names.js';
import { MCP_STATUS_TEXT, type ServerView } from './mcp-text.js';

/**
 * Every configured MCP server, and which of their tools are in the registry right now. The
 * registry is the one list the model is offered from (so per-channel policies and sub-agent
 * profiles filter MCP tools like any other): a tool is registered while its server is up, the
 * operator's allow/deny lets it through and, for a pinned server, its definition still hashes to
 * the pinned value. Everything else is unregistered at once.
 */

export type { ServerView, WithheldReason } from './mcp-text.js';

export interface McpHub {
  /** Resolves when every server's first connection attempt ended, or after `maxWaitMs`. */
  settled(maxWaitMs: number): Promise<void>;
  views(): ServerView[];
  /** The server's own tool list as last read (for `npm run mcp -- pin`). */
  serverTools(name: string): readonly Tool[];
  /** New pins from the config file: applied at once, no reconnect needed. */
  setPins(pins: ReadonlyMap<string, Record<string, string> | undefined>): void;
  /** Lines for /hermes status; admins also see what a pin holds back. */
  statusLines(isAdmin: boolean): string[];
  close(): Promise<void>;
}

export interface HubOptions {
  servers: readonly McpServerConfig[];
  registry: ToolRegistry;
  clock: Clock;
  log: Pick<Logger, 'info' | 'warn' | 'debug'>;
  /** Backoff and environment for the connections (tests shorten the backoff). */
  connection?: Pick<ConnectionOptions, 'baseDelayMs' | 'maxDelayMs' | 'maxAttempts' | 'env'>;
  /** Told after every change of a server's state, tools or pins (tests await it). */
  onChange?: () => void;
}

interface Registered {
  hash: string;
  registryName: string;
}

export function createMcpHub(opts: HubOptions): McpHub {
  const { registry, log } = opts;
  const servers = new Map(opts.servers.map((s) => [s.name, { ...s }]));
  const connections = new Map<string, McpConnection>();
  const registered = new Map<string, Map<string, Registered>>();
  const views = new Map<string, ServerView>();
  /** The withheld set last logged per server, so the same warning is not repeated on every change. */
  const lastWithheld = new Map<string, string>();

  function sync(name: string): void {
    const server = servers.get(name);
    const conn = connections.get(name);
    if (!server || !conn) return;
    const mine = registered.get(name) ?? new Map<string, Registered>();
    registered.set(name, mine);
    const up = conn.state() === 'up';
    const listed = up ? conn.tools().filter((t) => toolAllowed(server.tools, t.name)) : [];
    const view: ServerView = { name, state: conn.state(), ...(conn.problem() && { problem: conn.problem() }), pinned: server.pin !== undefined, offered: [], withheld: [], gone: [] };
    const keep = new Set<string>();
    for (const tool of listed) {
      const hash = definitionHash(tool);
      const pinned = server.pin?.[tool.name];
      if (server.pin && pinned !== hash) {
        view.withheld.push({ tool: tool.name, reason: pinned === undefined ? 'new' : 'changed' });
        continue;
      }
      keep.add(tool.name);
      view.offered.push(tool.name);
      const before = mine.get(tool.name);
      if (before?.hash === hash) continue;
      // A new definition is a new tool object: the registry caches specs per object.
      const made = mcpTool(server, tool, (t, args, signal) => conn.callTool(t, args, signal));
      registry.register(made);
      mine.set(tool.name, { hash, registryName: made.name });
    }
    for (const [tool, r] of mine) {
      if (keep.has(tool)) continue;
      registry.unregister(r.registryName);
      mine.delete(tool);
    }
    if (up && server.pin) {
      const seen = new Set(conn.tools().map((t) => t.name));
      view.gone = Object.keys(server.pin).filter((t) => !seen.has(t));
    }
    views.set(name, view);
    opts.onChange?.();
    if (up) {
      const key = JSON.stringify(view.withheld);
      if (key !== (lastWithheld.get(name) ?? '[]')) {
        lastWithheld.set(name, key);
        if (view.withheld.length > 0) {
          log.warn({ mcpServer: name, tools: view.withheld }, `MCP tools withheld: ${MCP_STATUS_TEXT.withheldList(view.withheld)} (pin them again with npm run mcp -- pin ${name} once reviewed)`);
        } else {
          log.info({ mcpServer: name }, 'MCP tools match their pins again');
        }
      }
    }
  }

  for (const server of servers.values()) {
    const conn = connectMcpServer(server, {
      ...opts.connection,
      clock: opts.clock,
      log,
      onChange: () => sync(server.name),
    });
    connections.set(server.name, conn);
    views.set(server.name, { name: server.name, state: 'starting', pinned: server.pin !== undefined, offered: [], withheld: [], gone: [] });
  }

  return {
    async settled(maxWaitMs) {
      let cancel: () => void = () => undefined;
      const timeout = new Promise<void>((resolve) => (cancel = opts.clock.setTimer(resolve, maxWaitMs)));
      await Promise.race([Promise.all([...connections.values()].map((c) => c.started())), timeout]);
      cancel();
    },
    views: () => [...servers.keys()].map((n) => views.get(n)!),
    serverTools: (name) => connections.get(name)?.tools() ?? [],
    setPins(pins) {
      for (const [name, server] of servers) {
        const pin = pins.get(name);
        if (JSON.stringify(pin) === JSON.stringify(server.pin)) continue;
        server.pin = pin;
        log.info({ mcpServer: name, pinned: pin !== undefined }, 'MCP pins re-read from the config file');
        sync(name);
      }
    },
    statusLines(isAdmin) {
      return [...servers.keys()].map((n) => MCP_STATUS_TEXT.server(views.get(n)!, isAdmin));
    },
    async close() {
      await Promise.all([...connections.values()].map((c) => c.close()));
    },
  };
}

/** The names the model sees for a server's tools (for the CLI's list). */
export function offeredName(server: string, tool: string): string {
  return mcpToolName(server, tool);
}
