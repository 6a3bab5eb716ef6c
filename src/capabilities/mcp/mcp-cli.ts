import pino from 'pino';
import { runIfEntryPoint, type CliIo } from '../../basics/cli/parse-cli.js';
import { systemClock } from '../../basics/clock.js';
import { loadConfig } from '../../settings/load-config.js';
import type { ExtensionsConfig } from '../../settings/config.js';
import { openSkillLibrary } from '../skills/skill-library.js';
import { ToolRegistry } from '../toolkit/registry.js';
import { createMcpHub, type McpHub } from './mcp-hub.js';
import { definitionHash, mcpToolName, toolAllowed } from './tool-names.js';
import { writePins } from './pin-file.js';
import { MCP_STATUS_TEXT } from './mcp-text.js';

/**
 * `npm run mcp -- list | pin [server] | pin-skills [skill]`: what the configured MCP servers offer
 * and the skills installed, and pinning them. Pinning records what the servers and folders say
 * right now: review the list first, then pin. The running bot picks new pins up by itself.
 */

const USAGE = `Usage: npm run mcp -- <command>

Commands:
  list               servers, their tools (model name, annotations, approval, pin state) and skills
  pin [server]       record the current tool definitions of every server (or one) in the config file
  pin-skills [skill] record the current files of every skill (or one) in the config file`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [command, target, ...rest] = argv;
  if (command === '--help' || command === 'help') return io.out(USAGE), 0;
  if (!command || !['list', 'pin', 'pin-skills'].includes(command) || rest.length > 0 || (command === 'list' && target)) {
    io.err(USAGE);
    return 2;
  }
  const loaded = loadConfig(io.env, io.cwd);
  if (!loaded.ok) {
    for (const line of loaded.errors) io.err(`config error: ${line}`);
    return 2;
  }
  const ext = loaded.config.extensions;
  if (command === 'pin-skills') return pinSkills(ext, target, io);
  const servers = target ? ext.servers.filter((s) => s.name === target) : ext.servers;
  if (target && servers.length === 0) {
    io.err(`There is no MCP server named "${target}" in ${ext.configFile ?? 'the config'}; configured: ${ext.servers.map((s) => s.name).join(', ') || 'none'}.`);
    return 2;
  }
  const hub = createMcpHub({ servers, registry: new ToolRegistry({}), clock: systemClock, log: pino({ level: 'silent' }), connection: { maxAttempts: 0 } });
  try {
    await hub.settled(Math.max(...servers.map((s) => s.timeoutMs), 1000) + 1000);
    return command === 'list' ? await list(hub, ext, io) : pinServers(hub, ext, io);
  } finally {
    await hub.close();
  }
}

async function list(hub: McpHub, ext: ExtensionsConfig, io: CliIo): Promise<number> {
  if (ext.servers.length === 0) io.out(`No MCP servers configured (mcp_servers: in ${ext.configFile ?? 'hermes.config.yaml'}).`);
  for (const view of hub.views()) {
    const server = ext.servers.find((s) => s.name === view.name)!;
    io.out(`${view.name} (${server.transport.kind}): ${view.state === 'up' ? 'up' : `not connected: ${view.problem ?? view.state}`}${server.pin ? ', pinned' : ', not pinned'}`);
    for (const tool of hub.serverTools(view.name)) {
      const a = tool.annotations ?? {};
      const hints = [a.readOnlyHint ? 'read-only' : 'may change things', a.destructiveHint === false ? 'not destructive' : a.readOnlyHint ? '' : 'destructive', a.openWorldHint === false ? 'closed world' : 'open world'].filter(Boolean);
      const approval = server.approval[tool.name] ?? (a.readOnlyHint ? 'runs without asking' : 'asks for approval');
      const pin = !server.pin ? '' : server.pin[tool.name] === undefined ? ', NEW (not pinned: withheld)' : server.pin[tool.name] === definitionHash(tool) ? ', pin ok' : ', CHANGED since pinned (withheld)';
      const offered = toolAllowed(server.tools, tool.name) ? mcpToolName(view.name, tool.name) : 'not offered (tools: allow/deny)';
      io.out(`  ${tool.name} → ${offered}: ${hints.join(', ')}; ${approval === 'always' ? 'asks for approval (approval: always)' : approval === 'never' ? 'runs without asking (approval: never)' : approval}${pin}`);
    }
    for (const gone of view.gone) io.out(`  ${gone}: pinned but no longer offered by the server`);
  }
  const skills = await openSkillLibrary({ dir: ext.skillsDir, pins: ext.skillPins, log: pino({ level: 'silent' }) });
  io.out(`Skills in ${ext.skillsDir}: ${skills.views().length || 'none'}`);
  for (const s of skills.views()) io.out(`  ${s.name}: ${s.state === 'changed' ? 'CHANGED since pinned (withheld)' : s.state}, ${s.files.length} file(s) — ${s.description}`);
  for (const p of skills.problems()) io.out(`  ${p.folder}: skipped, ${p.problem}`);
  return 0;
}

function pinServers(hub: McpHub, ext: ExtensionsConfig, io: CliIo): number {
  if (!ext.configFile) {
    io.err('There is no config file to write pins to: create hermes.config.yaml (or set HERMES_CONFIG).');
    return 2;
  }
  const down = hub.views().filter((v) => v.state !== 'up');
  if (down.length) {
    for (const v of down) io.err(MCP_STATUS_TEXT.server(v, true));
    io.err('Nothing was pinned: every server to pin must be connected.');
    return 1;
  }
  const edits = hub.views().map((v) => ({
    path: ['mcp_servers', v.name, 'pin'],
    value: Object.fromEntries(hub.serverTools(v.name).map((t) => [t.name, definitionHash(t)])),
  }));
  writePins(ext.configFile, edits);
  for (const e of edits) io.out(`Pinned ${e.path[1]}: ${Object.keys(e.value).length} tool(s) (${Object.keys(e.value).join(', ')}).`);
  io.out(`Written to ${ext.configFile}; a running bot picks the pins up within seconds.`);
  return 0;
}

async function pinSkills(ext: ExtensionsConfig, target: string | undefined, io: CliIo): Promise<number> {
  if (!ext.configFile) {
    io.err('There is no config file to write pins to: create hermes.config.yaml (or set HERMES_CONFIG).');
    return 2;
  }
  const skills = await openSkillLibrary({ dir: ext.skillsDir, pins: ext.skillPins, log: pino({ level: 'silent' }) });
  const chosen = skills.views().filter((s) => !target || s.name === target);
  if (chosen.length === 0) {
    io.err(target ? `There is no skill named "${target}" in ${ext.skillsDir}.` : `There are no skills in ${ext.skillsDir}.`);
    return 2;
  }
  writePins(ext.configFile, chosen.map((s) => ({ path: ['skills', s.name, 'pin'], value: s.hash })));
  io.out(`Pinned skill(s): ${chosen.map((s) => s.name).join(', ')}. Written to ${ext.configFile}.`);
  return 0;
}

runIfEntryPoint(import.meta.url, main, 'npm run mcp');
