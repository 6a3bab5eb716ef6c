import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { fakeMcpServer } from './fake-tools.js';

/** A real MCP server over stdio, started by the bot as a child: `node --import tsx stdio-server.ts`. FAKE_MCP_DIR names the test's folder. */
const dir = process.env.FAKE_MCP_DIR;
if (!dir) {
  process.stderr.write('FAKE_MCP_DIR is not set\n');
  process.exit(2);
}
appendFileSync(path.join(dir, 'events.log'), `started ${process.pid}\n`);
const server = fakeMcpServer({ dir, crash: () => process.exit(1) });
await server.connect(new StdioServerTransport());
