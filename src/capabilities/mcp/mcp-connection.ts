import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError, ToolListChangedNotificationSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { Clock } from '../../basics/clock.js';
import type { McpServerConfig } from '../../settings/mcp-servers.js';

/**
 * One MCP server, kept connected. States:
 * - starting: the first connection is being made
 * - up: connected; `tools` is the server's current list
 * - down: the connection ended or failed; a reconnect is scheduled with backoff
 * - failed: `maxAttempts` connections in a row failed; no more tries until the bot restarts
 *
 * A stdio server's process ending closes the transport; an HTTP server that stops answering shows
 * as a request failing at the transport level. Both are "down", and the hub stops offering the
 * server's tools until it is up again. Errors the server answers with (McpError) are not: the
 * server is there, it said no.
 */
export type ConnectionState = 'starting' | 'up' | 'down' | 'failed';

export interface ConnectionOptions {
  clock: Clock;
  log: Pick<Logger, 'info' | 'warn' | 'debug'>;
  /** Called whenever the state or the tool list changed. */
  onChange(): void;
  /** First reconnect delay; doubles per failure up to `maxDelayMs` (defaults 1 s and 60 s). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Connections in a row that may fail before giving up (default 8). */
  maxAttempts?: number;
  /** The bot's own environment, for PATH (stdio servers get nothing else of it). */
  env?: Record<string, string | undefined>;
}

/** Pages of tools/list read at most (a server that pages forever cannot hang the bot). */
const MAX_LIST_PAGES = 20;
const CLIENT_INFO = { name: 'hermes-agent', version: '0.1.0' };

export interface McpConnection {
  readonly name: string;
  state(): ConnectionState;
  /** The last list read while up (empty before the first). */
  tools(): readonly Tool[];
  /** Why it is down or failed, for the log and /hermes status. */
  problem(): string | undefined;
  /** Resolves once the first connection attempt ended, either way. */
  started(): Promise<void>;
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
  close(): Promise<void>;
}

export function connectMcpServer(server: McpServerConfig, opts: ConnectionOptions): McpConnection {
  const log = opts.log;
  const baseDelay = opts.baseDelayMs ?? 1000;
  const maxDelay = opts.maxDelayMs ?? 60_000;
  const maxAttempts = opts.maxAttempts ?? 8;
  let state: ConnectionState = 'starting';
  let tools: readonly Tool[] = [];
  let problem: string | undefined;
  let client: Client | undefined;
  let failures = 0;
  let closed = false;
  let cancelRetry: (() => void) | undefined;
  let firstDone: () => void = () => undefined;
  const first = new Promise<void>((resolve) => (firstDone = resolve));

  const set = (next: ConnectionState, why?: string) => {
    state = next;
    problem = why;
    opts.onChange();
  };

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new Client(CLIENT_INFO, { capabilities: {} });
    const transport = makeTransport(server, opts.env ?? process.env, log);
    // Set before connecting: a server that dies during the handshake must still count as down.
    c.onclose = () => {
      if (client === c) lost('the connection closed (server exited?)');
    };
    try {
      await c.connect(transport, { timeout: server.timeoutMs });
      client = c;
      c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        void refresh(c).catch((err: Error) => log.warn({ mcpServer: server.name, err: err.message }, 'MCP tool list could not be refreshed'));
      });
      tools = await listAll(c, server.timeoutMs);
      failures = 0;
      log.info({ mcpServer: server.name, tools: tools.length }, 'MCP server connected');
      set('up');
    } catch (err) {
      client = undefined;
      await c.close().catch(() => undefined);
      retryLater(errorText(err));
    } finally {
      firstDone();
    }
  }

  async function refresh(c: Client): Promise<void> {
    const next = await listAll(c, server.timeoutMs);
    if (client !== c) return;
    tools = next;
    log.info({ mcpServer: server.name, tools: tools.length }, 'MCP server tool list changed');
    opts.onChange();
  }

  function lost(why: string): void {
    const c = client;
    client = undefined;
    tools = [];
    if (c) void c.close().catch(() => undefined);
    if (closed) return;
    retryLater(why);
  }

  function retryLater(why: string): void {
    if (closed) return;
    failures += 1;
    if (failures > maxAttempts) {
      log.warn({ mcpServer: server.name, err: why, attempts: maxAttempts }, 'MCP server gave up: its tools stay off until the bot restarts');
      set('failed', `${why} (gave up after ${maxAttempts} tries; restart the bot to try again)`);
      return;
    }
    const delay = Math.min(maxDelay, baseDelay * 2 ** (failures - 1));
    log.warn({ mcpServer: server.name, err: why, retryInMs: delay }, 'MCP server is down: its tools are not offered until it is back');
    set('down', why);
    cancelRetry?.();
    cancelRetry = opts.clock.setTimer(() => {
      cancelRetry = undefined;
      void connect();
    }, delay);
  }

  const connection: McpConnection = {
    name: server.name,
    state: () => state,
    tools: () => tools,
    problem: () => problem,
    started: () => first,
    async callTool(name, args, signal) {
      const c = client;
      if (!c || state !== 'up') throw new Error(`the MCP server ${server.name} is not connected right now`);
      try {
        return (await c.callTool({ name, arguments: args }, undefined, { signal, timeout: server.timeoutMs })) as CallToolResult;
      } catch (err) {
        // The server answered with an error, or we gave up on it: it is still there. Anything else
        // (connection refused, reset) means it is gone.
        if (!(err instanceof McpError) && !signal.aborted && client === c) lost(errorText(err));
        throw err;
      }
    },
    async close() {
      closed = true;
      cancelRetry?.();
      const c = client;
      client = undefined;
      firstDone();
      await c?.close().catch(() => undefined);
    },
  };
  // Started on the next tick, so the caller holds the connection before the first onChange.
  void Promise.resolve().then(connect);
  return connection;
}

async function listAll(c: Client, timeout: number): Promise<Tool[]> {
  const out: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const res = await c.listTools(cursor ? { cursor } : undefined, { timeout });
    out.push(...res.tools);
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  return out;
}

function makeTransport(server: McpServerConfig, env: Record<string, string | undefined>, log: Pick<Logger, 'debug'>): Transport {
  const t = server.transport;
  if (t.kind === 'http') return new StreamableHTTPClientTransport(new URL(t.url), { requestInit: { headers: t.headers } });
  const transport = new StdioClientTransport({ command: t.command, args: t.args, env: childEnv(t.env, env), ...(t.cwd && { cwd: t.cwd }), stderr: 'pipe' });
  // The child's stderr is its log: kept out of the bot's own output, readable at debug level.
  transport.stderr?.on('data', (chunk: Buffer) => log.debug({ mcpServer: server.name, stderr: chunk.toString('utf8').slice(0, 2000) }, 'MCP server stderr'));
  return transport;
}

/**
 * The child's whole environment: PATH (so `npx`, `node`, `uvx` resolve as in the bot's shell) and
 * exactly the variables the operator listed. The SDK adds HOME, USER, SHELL and the like to
 * whatever it is given; those names are listed here as absent, which Node's spawn leaves out.
 */
export function childEnv(listed: Record<string, string>, env: Record<string, string | undefined>): Record<string, string> {
  const cleared: Record<string, string | undefined> = Object.fromEntries(DEFAULT_INHERITED_ENV_VARS.map((k) => [k, undefined]));
  const out: Record<string, string | undefined> = { ...cleared, ...(env.PATH !== undefined && { PATH: env.PATH }), ...listed };
  return out as Record<string, string>;
}

function errorText(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0]!.slice(0, 300);
}
