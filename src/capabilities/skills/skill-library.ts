import type { Logger } from 'pino';
import { currentHash, readConfined, readSkillFolders, type SkillFolder } from './skill-folder.js';
import { SKILL_TEXT } from './skill-text.js';

/**
 * The skills under HERMES_SKILLS_DIR and whether each may be used. The trust model
 * (docs/mcp-and-skills.md): a skill's files usually come from elsewhere (a registry, a colleague),
 * so an unpinned skill is outside text: what `use_skill` and `read_skill_file` return is wrapped as
 * untrusted data and taints the turn, so anything it leads to that changes state or sends data
 * asks a person first. Pinning is the operator saying "I read this exact folder": a pinned skill
 * whose files still hash to the pin is given as the operator's own instructions. A pinned skill
 * whose files changed is withheld (not listed, not usable) until it is pinned again.
 */

/** The tool that loads a skill (tools/skills.ts); the system prompt lists skills only while it is offered. */
export const USE_SKILL_TOOL = 'use_skill';

export interface SkillSummary {
  name: string;
  description: string;
}

export interface SkillView extends SkillSummary {
  state: 'pinned' | 'unpinned' | 'changed';
  hash: string;
  files: string[];
}

export interface UsedSkill {
  name: string;
  instructions: string;
  files: string[];
  dir: string;
  /** Pinned and unchanged: the operator's own instructions. Otherwise outside text. */
  trusted: boolean;
}

export interface SkillLibrary {
  /** The usable skills (pinned-and-unchanged or unpinned), for the system prompt. */
  list(): SkillSummary[];
  views(): SkillView[];
  /** Problems of folders that are not usable skills (bad front matter), for the log and the CLI. */
  problems(): Array<{ folder: string; problem: string }>;
  /** Re-checks the folder against its pin; throws a model-facing message when it may not be used. */
  use(name: string): Promise<UsedSkill>;
  readFile(name: string, rel: string): Promise<{ text: string; trusted: boolean }>;
  setPins(pins: Record<string, string>): void;
  rescan(): Promise<void>;
  statusLines(isAdmin: boolean): string[];
}

export async function openSkillLibrary(opts: { dir: string; pins: Record<string, string>; log: Pick<Logger, 'info' | 'warn'> }): Promise<SkillLibrary> {
  let pins = { ...opts.pins };
  let skills = new Map<string, SkillFolder>();
  let problems: Array<{ folder: string; problem: string }> = [];

  const stateOf = (s: SkillFolder): SkillView['state'] => (pins[s.name] === undefined ? 'unpinned' : pins[s.name] === s.hash ? 'pinned' : 'changed');

  async function rescan(): Promise<void> {
    const read = await readSkillFolders(opts.dir);
    skills = new Map(read.flatMap((r) => (r.ok ? [[r.skill.name, r.skill] as const] : [])));
    problems = read.flatMap((r) => (r.ok ? [] : [{ folder: r.folder, problem: r.problem }]));
    for (const p of problems) opts.log.warn({ skill: p.folder, problem: p.problem }, 'skill folder skipped');
    const changed = [...skills.values()].filter((s) => stateOf(s) === 'changed').map((s) => s.name);
    if (changed.length) opts.log.warn({ skills: changed }, SKILL_TEXT.changedLog(changed));
    if (skills.size) opts.log.info({ skills: [...skills.keys()] }, 'skills found');
  }

  /** The skill as it is on disk now, or a model-facing refusal. */
  async function current(name: string): Promise<{ skill: SkillFolder; trusted: boolean }> {
    const skill = skills.get(name);
    if (!skill) throw new Error(SKILL_TEXT.unknown(name, [...skills.keys()].filter((n) => stateOf(skills.get(n)!) !== 'changed')));
    const pin = pins[name];
    if (pin === undefined) return { skill, trusted: false };
    // Files can change after start: a pinned skill is re-hashed on every use.
    const hash = await currentHash(skill.dir);
    if (hash !== pin) {
      if (hash !== skill.hash) skills.set(name, { ...skill, hash });
      opts.log.warn({ skill: name }, SKILL_TEXT.changedLog([name]));
      throw new Error(SKILL_TEXT.withheld(name));
    }
    return { skill, trusted: true };
  }

  await rescan();
  return {
    list: () => [...skills.values()].filter((s) => stateOf(s) !== 'changed').map((s) => ({ name: s.name, description: s.description })),
    views: () => [...skills.values()].map((s) => ({ name: s.name, description: s.description, state: stateOf(s), hash: s.hash, files: s.files })),
    problems: () => problems,
    async use(name) {
      const { skill, trusted } = await current(name);
      return { name, instructions: skill.instructions, files: skill.files, dir: skill.dir, trusted };
    },
    async readFile(name, rel) {
      const { skill, trusted } = await current(name);
      const clean = rel.replace(/^\.\//, '');
      if (!skill.files.includes(clean)) throw new Error(SKILL_TEXT.noFile(name, rel, skill.files));
      const data = await readConfined(skill.dir, clean);
      if (data.includes(0)) return { text: SKILL_TEXT.binary(clean, data.length), trusted };
      return { text: data.toString('utf8'), trusted };
    },
    setPins(next) {
      if (JSON.stringify(next) === JSON.stringify(pins)) return;
      pins = { ...next };
      opts.log.info({ pinned: Object.keys(pins) }, 'skill pins re-read from the config file');
    },
    rescan,
    statusLines(isAdmin) {
      const views = [...skills.values()];
      if (views.length === 0) return [];
      const changed = views.filter((s) => stateOf(s) === 'changed').map((s) => s.name);
      const line = `Skills: ${views.length - changed.length} usable (${views.filter((s) => stateOf(s) === 'pinned').length} pinned)`;
      return isAdmin && changed.length ? [`${line}. ${SKILL_TEXT.changedStatus(changed)}`] : [line];
    },
  };
}
