import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { fakeMcpServer } from './fake-tools.js';

/**
 * A real streamable-HTTP MCP server on 127.0.0.1 (stateful sessions, so it can send
 * tools/list_changed). `stop()` and a new `startHttpMcpFake({ port })` play a server that goes away
 * and comes back on the same address. Requests without the expected header get 401.
 */
export interface HttpMcpFake {
  url: string;
  port: number;
  /** Authorization headers seen, in order (to check `${NAME}` references reach the server). */
  authorizations: string[];
  stop(): Promise<void>;
}

export async function startHttpMcpFake(opts: { dir: string; port?: number; requireAuth?: string }): Promise<HttpMcpFake> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const authorizations: string[] = [];
  const http: Server = createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    authorizations.push(auth);
    if (opts.requireAuth && auth !== opts.requireAuth) {
      res.writeHead(401).end();
      return;
    }
    const sid = req.headers['mcp-session-id'];
    const known = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (known) {
      void known.handleRequest(req, res);
      return;
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void transports.set(id, transport) });
    const server = fakeMcpServer({ dir: opts.dir });
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    authorizations,
    async stop() {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
