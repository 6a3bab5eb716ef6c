import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/capabilities/mcp/mcp-cli.js';
import { startHarness, type Harness } from '../helpers/core-harness.js';
import { ROOT, STDIO_SERVER, tempDir } from './mcp-harness.js';

/**
 * `npm run mcp -- list | pin` (its main, with argv, as the package script calls it) against a real
 * config file naming the fake MCP server process, then a core on that file: pinned tools offered,
 * and a re-pin while the core runs takes effect without a restart (the pin watcher).
 */

let h: Harness | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const c of cleanups.splice(0)) c();
});

const TOOLS = ['change_echo', 'crash', 'delete_file', 'echo', 'fail', 'get_env', 'picture', 'read_news', 'slow'];
// A well-formed hash no definition has: echo is "changed", every other tool is new, so all are withheld.
const STALE = 'A'.repeat(43);

function configFile(pinYaml = ''): { file: string; dir: string } {
  const tmp = tempDir();
  cleanups.push(tmp.remove);
  const file = path.join(tmp.dir, 'hermes.config.yaml');
  writeFileSync(
    file,
    [
      '# The operator keeps notes here.',
      'mcp_servers:',
      '  # the fake server, for tests',
      '  fake:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: ["--import", "tsx", ${JSON.stringify(STDIO_SERVER)}]`,
      `    cwd: ${JSON.stringify(ROOT)}`,
      '    env:',
      `      FAKE_MCP_DIR: ${JSON.stringify(tmp.dir)}`,
      '    timeout_ms: 20000 # slow CI machines',
      pinYaml,
    ].join('\n'),
  );
  return { file, dir: tmp.dir };
}

async function cli(argv: string[], file: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: { HERMES_CONFIG: file, HERMES_SKILLS_DIR: path.join(path.dirname(file), 'skills') }, cwd: path.dirname(file) });
  return { code, out, err };
}

const offered = () => h!.core.registry.names().filter((n) => n.startsWith('mcp__fake__')).sort();

describe('npm run mcp', () => {
  it('list shows the server, its tools with annotations and approval, and the pin state', async () => {
    const { file } = configFile();
    const before = await cli(['list'], file);
    expect(before.err).toEqual([]);
    expect(before.code).toBe(0);
    expect(before.out[0]).toBe('fake (stdio): up, not pinned');
    expect(before.out).toContain('  echo → mcp__fake__echo: read-only, closed world; runs without asking');
    expect(before.out.find((l) => l.startsWith('  delete_file '))).toMatch(/may change things, destructive, .*asks for approval$/);

    writeFileSync(file, `${readFileSync(file, 'utf8')}    pin:\n      echo: ${STALE}\n`);
    const after = await cli(['list'], file);
    expect(after.out[0]).toBe('fake (stdio): up, pinned');
    expect(after.out.find((l) => l.startsWith('  echo '))).toMatch(/, CHANGED since pinned \(withheld\)$/);
    expect(after.out.find((l) => l.startsWith('  slow '))).toMatch(/, NEW \(not pinned: withheld\)$/);
  });

  it('pin writes the hashes into the file keeping its comments; a core on it offers the pinned tools', async () => {
    const { file } = configFile();
    const pinned = await cli(['pin', 'fake'], file);
    expect(pinned.err).toEqual([]);
    expect(pinned.code).toBe(0);
    expect(pinned.out[0]).toMatch(new RegExp(`^Pinned fake: ${TOOLS.length} tool\\(s\\) \\(`));
    for (const t of TOOLS) expect(pinned.out[0]).toContain(t);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('# The operator keeps notes here.');
    expect(text).toContain('# the fake server, for tests');
    expect(text).toContain('# slow CI machines');
    expect(text).toMatch(/\n {4}pin:\n {6}\w+: [A-Za-z0-9_-]{43}\n/);

    const listed = await cli(['list'], file);
    expect(listed.out.filter((l) => l.endsWith(', pin ok'))).toHaveLength(TOOLS.length);

    h = await startHarness({ env: { HERMES_CONFIG: file } });
    await h.core.extensions.mcp!.settled(30_000);
    expect(offered()).toEqual(TOOLS.map((t) => `mcp__fake__${t}`));
  });

  it('pin writes into a JSON config file too, which then reads back with every pin ok', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const file = path.join(tmp.dir, 'hermes.config.json');
    const server = { command: process.execPath, args: ['--import', 'tsx', STDIO_SERVER], cwd: ROOT, env: { FAKE_MCP_DIR: tmp.dir }, timeout_ms: 20000 };
    writeFileSync(file, JSON.stringify({ mcp_servers: { fake: server } }));
    expect((await cli(['pin'], file)).code).toBe(0);
    const written = JSON.parse(readFileSync(file, 'utf8')) as { mcp_servers: { fake: { pin: Record<string, string>; command: string } } };
    expect(Object.keys(written.mcp_servers.fake.pin).sort()).toEqual(TOOLS);
    expect(written.mcp_servers.fake.command).toBe(process.execPath);
    const listed = await cli(['list'], file);
    expect(listed.out.filter((l) => l.endsWith(', pin ok'))).toHaveLength(TOOLS.length);
  });

  it('pin of an unknown server is refused with the configured names, and the file is left alone', async () => {
    const { file } = configFile();
    const text = readFileSync(file, 'utf8');
    const r = await cli(['pin', 'nope'], file);
    expect(r.code).toBe(2);
    expect(r.err[0]).toContain('There is no MCP server named "nope"');
    expect(r.err[0]).toContain('configured: fake');
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('a re-pin while the core runs offers the withheld tools without a restart', async () => {
    const { file } = configFile(`    pin:\n      echo: ${STALE}\n`);
    h = await startHarness({ env: { HERMES_CONFIG: file } });
    const hub = h.core.extensions.mcp!;
    await hub.settled(30_000);
    expect(hub.views()[0]!.state).toBe('up');
    expect(offered()).toEqual([]);
    expect(hub.statusLines(true)[0]).toContain('echo (definition changed since it was pinned)');

    const r = await cli(['pin'], file);
    expect(r.code).toBe(0);
    // The watcher polls the file's mtime; the core was not restarted.
    await expect.poll(offered, { timeout: 15_000, interval: 100 }).toEqual(TOOLS.map((t) => `mcp__fake__${t}`));
    expect(h.core.registry.get('mcp__fake__echo')!.description).toBe('[MCP server fake] Repeats the text it is given.');
  });
});
