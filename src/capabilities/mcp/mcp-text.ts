import type { ServerView, WithheldReason } from './mcp-hub.js';

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
