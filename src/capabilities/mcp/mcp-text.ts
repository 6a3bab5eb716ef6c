import type { ConnectionState } from './mcp-connection.js';

export type WithheldReason = 'changed' | 'new';

/** One server as /hermes status and the CLI describe it. */
export interface ServerView {
  name: string;
  state: ConnectionState;
  problem?: string;
  pinned: boolean;
  /** Tools offered now, by the server's own name. */
  offered: string[];
  /** Tools the pin holds back: changed since pinned, or not pinned at all. */
  withheld: Array<{ tool: string; reason: WithheldReason }>;
  /** Pinned tools the server no longer lists. */
  gone: string[];
}

/** What people read about MCP servers (/hermes status, the CLI), in one place. */
export const MCP_STATUS_TEXT = {
  reason: (r: WithheldReason) => (r === 'changed' ? 'definition changed since it was pinned' : 'new, not pinned'),
  withheldList: (w: ServerView['withheld']) => w.map((x) => `${x.tool} (${MCP_STATUS_TEXT.reason(x.reason)})`).join(', '),
  server(v: ServerView, isAdmin: boolean): string {
    const head =
      v.state === 'up'
        ? `MCP ${v.name}: up, ${v.offered.length} tool${v.offered.length === 1 ? '' : 's'} offered`
        : v.state === 'starting'
          ? `MCP ${v.name}: starting, its tools are not offered yet`
          : v.state === 'down'
            ? `MCP ${v.name}: down (${v.problem ?? 'unknown problem'}), reconnecting; its tools are not offered`
            : `MCP ${v.name}: failed (${v.problem ?? 'unknown problem'}); its tools are not offered`;
    if (!isAdmin || v.withheld.length === 0) return head;
    return `${head}. Withheld until an admin re-pins them (npm run mcp -- pin ${v.name}): ${MCP_STATUS_TEXT.withheldList(v.withheld)}`;
  },
} as const;
