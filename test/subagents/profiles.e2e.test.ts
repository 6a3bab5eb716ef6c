import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/settings/load-config.js';
import { checkProfiles, knownTools, resolveProfiles } from '../../src/settings/agent-profiles.js';
import { builtinToolCatalogue, builtinTools } from '../../tools/index.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function withConfig(yaml: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-agents-'));
  dirs.push(dir);
  await writeFile(path.join(dir, 'hermes.config.yaml'), yaml);
  return dir;
}
const catalogue = (settings = {}) => knownTools(builtinToolCatalogue(), settings);

describe('agent profiles', () => {
  it('has the three built-ins of the contract, each with max_steps 8', () => {
    const p = resolveProfiles(undefined);
    expect([...p.keys()]).toEqual(['researcher', 'coder', 'writer']);
    expect(p.get('researcher')!.tools).toEqual(['web_search', 'fetch_url', 'get_current_time', 'calculator']);
    expect(p.get('coder')!.tools).toEqual(['list_files', 'read_file', 'write_file', 'run_code', 'calculator']);
    expect(p.get('writer')!.tools).toEqual(['list_files', 'read_file', 'write_file']);
    expect([...p.values()].every((x) => x.maxSteps === 8)).toBe(true);
    const checked = checkProfiles(p, catalogue());
    expect(checked.errors).toEqual([]);
    expect(checked.warnings).toEqual([]);
  });

  it('reads agents: from hermes.config.yaml: turn off, change a built-in, add one', async () => {
    const dir = await withConfig(
      'agents:\n  writer: false\n  researcher:\n    max_steps: 12\n    model: big-model\n  analyst:\n    description: Looks at data.\n    instructions: Analyse the files.\n    tools: [list_files, read_file, run_code]\n',
    );
    const r = loadConfig({}, dir);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect([...r.config.agents.keys()]).toEqual(['researcher', 'coder', 'analyst']);
    expect(r.config.agents.get('researcher')).toMatchObject({ maxSteps: 12, model: 'big-model', tools: ['web_search', 'fetch_url', 'get_current_time', 'calculator'] });
    expect(r.config.agents.get('analyst')).toMatchObject({ maxSteps: 8, builtin: false });
    expect(checkProfiles(r.config.agents, catalogue()).errors).toEqual([]);
    // The delegate tool offers exactly the enabled profiles.
    const delegate = builtinTools({ agents: r.config.agents }).find((t) => t.name === 'delegate')!;
    expect(delegate.description).toContain('- analyst: Looks at data.');
    expect(delegate.description).not.toContain('- writer:');
    expect(delegate.input.safeParse({ agent: 'writer', task: 'x' }).success).toBe(false);
    expect(delegate.input.safeParse({ agent: 'analyst', task: 'x' }).success).toBe(true);
  });

  it('offers no delegate tool when every profile is off', async () => {
    const dir = await withConfig('agents:\n  researcher: false\n  coder: false\n  writer: false\n');
    const r = loadConfig({}, dir);
    expect(r.ok && r.config.agents.size).toBe(0);
    if (r.ok) expect(builtinTools({ agents: r.config.agents }).map((t) => t.name)).not.toContain('delegate');
  });

  it('rejects a malformed section with one line per problem', async () => {
    const r = loadConfig({}, await withConfig('agents:\n  Bad Name: false\n  mine:\n    tools: [calculator]\n  researcher:\n    max_steps: 0\n    colour: red\n'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.join('\n')).toMatch(/agents\.Bad Name: agent names use lowercase/);
    expect(r.errors.filter((e) => e.includes('Bad Name'))).toHaveLength(1);
    expect(r.errors.join('\n')).toMatch(/agents\.mine\.description: a profile of your own needs description; see docs\/sub-agents\.md/);
    expect(r.errors.join('\n')).toMatch(/agents\.mine\.instructions/);
    expect(r.errors.join('\n')).toMatch(/agents\.researcher\.max_steps/);
    expect(r.errors.join('\n')).toMatch(/agents\.researcher: Unrecognized key: "colour"/);
  });

  it('refuses an unknown tool, a gated tool and delegate in a profile; a built-in loses a tool the operator gated', () => {
    const mine = resolveProfiles({ helper: { description: 'd', instructions: 'i', tools: ['calculater', 'send_webhook', 'delegate', 'calculator'] } });
    const checked = checkProfiles(mine, catalogue());
    expect(checked.errors).toEqual([
      expect.stringMatching(/^hermes\.config agents\.helper\.tools: there is no tool named "calculater"; use names from docs\/tools\.md \(get_current_time, calculator/),
      expect.stringMatching(/^hermes\.config agents\.helper\.tools: send_webhook needs a person's approval/),
      expect.stringMatching(/^hermes\.config agents\.helper\.tools: sub-agents cannot delegate/),
    ]);
    // The operator made fetch_url gated: the built-in researcher goes on without it, with a warning.
    const gated = checkProfiles(resolveProfiles(undefined), catalogue({ fetch_url: { needsApproval: true } }));
    expect(gated.errors).toEqual([]);
    expect(gated.profiles.get('researcher')!.tools).toEqual(['web_search', 'get_current_time', 'calculator']);
    expect(gated.warnings).toEqual([expect.stringMatching(/^agents\.researcher: fetch_url is not given to the built-in researcher sub-agent/)]);
    // ... but a researcher whose tools the operator wrote is checked strictly.
    const strict = checkProfiles(resolveProfiles({ researcher: { tools: ['fetch_url'] } }), catalogue({ fetch_url: { needsApproval: true } }));
    expect(strict.errors).toEqual([expect.stringMatching(/agents\.researcher\.tools: fetch_url needs a person's approval/)]);
  });

  it('stops the start with exit code 2 and one config error line per bad tool (unknown, needs approval)', async () => {
    const dir = await withConfig('agents:\n  helper:\n    description: Helps.\n    instructions: Help.\n    tools: [web_serch, send_webhook]\n');
    const root = path.resolve(import.meta.dirname, '../..');
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(path.join(root, 'node_modules/.bin/tsx'), [path.join(root, 'src/main.ts')], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', HERMES_DATA_DIR: path.join(dir, 'data') },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`timed out; stderr: ${stderr}`));
      }, 60_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
      child.stdin.end();
    });
    expect(run.code).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^config error: hermes\.config agents\.helper\.tools: there is no tool named "web_serch"; use names from docs\/tools\.md \(.*web_search.*\)\.$/);
    expect(lines[1]).toBe("config error: hermes.config agents.helper.tools: send_webhook needs a person's approval, and sub-agents cannot ask anyone; remove it (the main agent keeps it).");
  }, 70_000);
});
