import * as z from 'zod';
import { defineTool, type AnyTool, type ToolContext, type ToolResult } from '../src/capabilities/toolkit/tool-api.js';
import { USE_SKILL_TOOL, type SkillLibrary } from '../src/capabilities/skills/skill-library.js';
import { SKILL_TEXT } from '../src/capabilities/skills/skill-text.js';
import { readConfined, SKILL_FILE } from '../src/capabilities/skills/skill-folder.js';

/**
 * use_skill and read_skill_file (docs/mcp-and-skills.md). Only offered when some skill is usable.
 * What an unpinned skill says reaches the model as outside text (untrusted, taints the turn); a
 * pinned, unchanged skill's text is the operator's and is given as it is.
 */

export const USE_SKILL = USE_SKILL_TOOL;
export const READ_SKILL_FILE = 'read_skill_file';

const name = z.string().min(1).max(64).describe('The skill name, as listed under Skills in your instructions');

function result(text: string, skill: string, trusted: boolean): ToolResult {
  return trusted ? text : { summary: text, outsideSource: `skill ${skill} (not pinned)` };
}

/** The skill's files other than SKILL.md, copied to skills/<name>/ so run_code can run them. */
async function copyIntoWorkspace(ctx: ToolContext, used: { name: string; files: string[]; dir: string }): Promise<string | undefined> {
  const ws = ctx.workspace;
  const extra = used.files.filter((f) => f !== SKILL_FILE);
  if (!ws || extra.length === 0) return undefined;
  const base = `skills/${used.name}`;
  for (const f of extra) await ws.write(`${base}/${f}`, await readConfined(used.dir, f));
  return base;
}

/** A skill the channel's policy denies is refused by name, whatever the model asks. */
function checkAllowed(ctx: ToolContext, skill: string): void {
  if (ctx.skillAllowed && !ctx.skillAllowed(skill)) throw new Error(SKILL_TEXT.deniedHere(skill));
}

export function skillTools(library: SkillLibrary): AnyTool[] {
  const available = () => library.list().length > 0;
  const useSkill = defineTool({
    name: USE_SKILL,
    description: "Load a skill: its instructions and the list of its files (copied into the workspace, where run_code can run its scripts). Use it when a request matches a skill's description.",
    input: z.object({ name }),
    isAvailable: available,
    async run(args, ctx) {
      checkAllowed(ctx, args.name);
      const used = await library.use(args.name);
      const copiedTo = await copyIntoWorkspace(ctx, used).catch((err: Error) => {
        ctx.log.warn({ skill: used.name, err: err.message }, 'skill files not copied into the workspace');
        return undefined;
      });
      const text = `${SKILL_TEXT.used(used.name, used.files, copiedTo, used.trusted)}\n\nInstructions:\n${used.instructions}`;
      return result(text, used.name, used.trusted);
    },
  });
  const readSkillFile = defineTool({
    name: READ_SKILL_FILE,
    description: 'Read one file of a skill (read-only; a path from the list use_skill gave, e.g. reference.md or scripts/fill.py).',
    input: z.object({ name, path: z.string().min(1).max(500).describe('A file path inside the skill folder') }),
    isAvailable: available,
    maxResultChars: 20_000,
    async run(args, ctx) {
      checkAllowed(ctx, args.name);
      const r = await library.readFile(args.name, args.path);
      return result(r.text, args.name, r.trusted);
    },
  });
  return [useSkill, readSkillFile];
}
