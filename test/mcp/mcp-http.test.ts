import { afterEach, describe, expect, it } from 'vitest';
import { resolveMcpServers } from '../../src/settings/mcp-servers.js';
import type { Ready } from '../../src/capabilities/toolkit/executor.js';
import { makeToolContext } from '../tools/context-helper.js';
import { startHttpMcpFake, type HttpMcpFake } from '../fakes/mcp/http-server.js';
import { hubHarness, tempDir } from './mcp-harness.js';

/** The hub against a real streamable-HTTP MCP server that goes away and comes back on the same port. */

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('MCP over streamable HTTP', () => {
  it('sends ${NAME} headers, offers the tools, withholds them while the server is gone and offers them again when it is back', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    let server: HttpMcpFake = await startHttpMcpFake({ dir: tmp.dir, requireAuth: 'Bearer t0ken' });
    cleanups.push(() => server.stop());
    const resolved = resolveMcpServers({ remote: { url: server.url, headers: { Authorization: 'Bearer ${MCP_TOKEN}' }, timeout_ms: 5000 } }, { MCP_TOKEN: 't0ken' }, tmp.dir);
    expect(resolved.errors).toEqual([]);
    expect(resolved.secrets).toEqual(['t0ken']);
    const h = hubHarness(resolved.servers);
    cleanups.push(() => h.hub.close());
    await h.until(() => h.registry.get('mcp__remote__echo') !== undefined, 'the HTTP server tools');
    const prep = (): Ready => {
      const p = h.executor.prepareCall({ id: 'c1', name: 'mcp__remote__echo', arguments: '{"text":"hi"}' }, { isAdmin: false });
      if (p.kind !== 'ready') throw new Error(p.outcome.content);
      return p;
    };
    expect((await h.executor.runPrepared(prep(), makeToolContext())).content).toBe('echo: hi');

    const ready = prep();
    await server.stop();
    const failed = await h.executor.runPrepared(ready, makeToolContext());
    expect(failed.ok).toBe(false);
    await h.until(() => h.hub.views()[0]!.state !== 'up', 'the server to count as down');
    expect(h.registry.get('mcp__remote__echo')).toBeUndefined();

    server = await startHttpMcpFake({ dir: tmp.dir, port: server.port, requireAuth: 'Bearer t0ken' });
    await h.until(() => h.registry.get('mcp__remote__echo') !== undefined, 'the tools to come back');
    expect((await h.executor.runPrepared(prep(), makeToolContext())).content).toBe('echo: hi');
  });

  it('a ${NAME} that is not set is a config error naming it', () => {
    const r = resolveMcpServers({ remote: { url: 'http://127.0.0.1:1/mcp', headers: { Authorization: 'Bearer ${MISSING_TOKEN}' } } }, {}, '/');
    expect(r.errors).toEqual(['mcp_servers.remote.headers.Authorization uses ${MISSING_TOKEN}, which is not set: set MISSING_TOKEN in the environment (or .env), or remove the reference.']);
  });
});
