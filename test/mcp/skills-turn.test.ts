import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openSkillLibrary } from '../../src/capabilities/skills/skill-library.js';
import { skillTools } from '../../tools/skills.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { tempDir } from './mcp-harness.js';

/** Skills through the whole core: the system prompt lists them, use_skill fills the session workspace. */

let h: Harness | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const c of cleanups.splice(0)) c();
});

const INSTRUCTIONS = 'Run scripts/fill.py with the data, then check page 2.';

async function start(): Promise<void> {
  const tmp = tempDir();
  cleanups.push(tmp.remove);
  const dir = path.join(tmp.dir, 'skills', 'pdf-forms');
  mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  writeFileSync(path.join(dir, 'SKILL.md'), `---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n${INSTRUCTIONS}\n`);
  writeFileSync(path.join(dir, 'scripts', 'fill.py'), 'print("filled")\n');
  const skills = await openSkillLibrary({ dir: path.join(tmp.dir, 'skills'), pins: {}, log: pino({ level: 'silent' }) });
  h = await startHarness({ tools: skillTools(skills), core: { skills } });
}

function find(dir: string, rel: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith(rel)).map((f) => path.join(dir, f));
}

describe('skills in a turn', () => {
  it('the system prompt lists a skill by name and description only; use_skill copies its files into the session workspace', async () => {
    await start();
    h!.fake.enqueue({ toolCalls: [{ id: 'c_skill', name: 'use_skill', arguments: { name: 'pdf-forms' } }] }, { text: 'Form filled.' });
    await h!.core.gateway.handleMessage({ id: 'sk-1', conversation: conv('C5'), speaker: user('U5'), text: 'fill this form', mentioned: true });
    await h!.port.waitFor(isText, 30_000);

    const first = h!.fake.requests[0]!;
    const system = first.messages.find((m: { role: string }) => m.role === 'system')!.content as string;
    expect(system).toContain('- pdf-forms: Fill PDF forms.');
    expect(system).not.toContain(INSTRUCTIONS);
    expect(system).not.toContain('fill.py');
    expect((first.tools ?? []).map((t) => (t.type === 'function' ? t.function.name : ''))).toContain('use_skill');

    const toolMessage = h!.fake.requests.at(-1)!.messages.find((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'c_skill');
    expect(toolMessage?.content).toContain(INSTRUCTIONS);
    const copies = find(h!.config.files.workspaceDir, path.join('skills', 'pdf-forms', 'scripts', 'fill.py'));
    expect(copies).toHaveLength(1);
    expect(readFileSync(copies[0]!, 'utf8')).toBe('print("filled")\n');
  });
});
