import * as z from 'zod';

/**
 * Agent profiles: who the main agent can hand a focused task to (`delegate`). A profile is a name,
 * a description the main model reads when choosing, the instructions the sub-agent works under, and
 * a small tool list. Sub-agents only gather and prepare: a tool that needs a person's approval is
 * never theirs, and neither is `delegate` (one level deep).
 *
 * In hermes.config.yaml, `agents:` maps a name to a profile. A built-in name takes partial changes
 * (only the fields given replace the built-in's); `name: false` turns a profile off.
 */

/** The tool that starts sub-agents; never in a profile (sub-agents cannot delegate). */
export const DELEGATE_TOOL = 'delegate';
export const DEFAULT_MAX_STEPS = 8;
/** A sub-agent's step ceiling whatever a profile says: every step is a paid model call. */
export const MAX_PROFILE_STEPS = 50;

const NAME = /^[a-z][a-z0-9_-]{0,31}$/;

const profileFields = {
  description: z.string().trim().min(1).max(500),
  instructions: z.string().trim().min(1).max(8000),
  tools: z.array(z.string().min(1)).min(1).max(30),
  model: z.string().trim().min(1).optional(),
  max_steps: z.number().int().min(1).max(MAX_PROFILE_STEPS).optional(),
};

const partialProfile = z.object(profileFields).partial().strict();

/** The `agents:` section as written; which fields are required depends on the name (see resolveProfiles). */
export const agentsFileSchema = z.record(z.string(), z.union([z.literal(false), partialProfile])).superRefine(
  (agents, ctx) => {
    // Also run when a field already failed, so every problem of the section is reported at once.
    if (typeof agents !== 'object' || agents === null) return;
    for (const [name, value] of Object.entries(agents as Record<string, unknown>)) {
      if (!NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'agent names use lowercase letters, digits, - and _ (at most 32, starting with a letter)' });
      if (value === false || typeof value !== 'object' || name in BUILTIN_PROFILES) continue;
      for (const field of ['description', 'instructions', 'tools'] as const) {
        if (!(field in (value as object))) ctx.addIssue({ code: 'custom', path: [name, field], message: `a profile of your own needs ${field}` });
      }
    }
  },
  { when: () => true },
);

export type AgentsFile = z.infer<typeof agentsFileSchema>;

export interface AgentProfile {
  name: string;
  description: string;
  instructions: string;
  tools: string[];
  model?: string;
  maxSteps: number;
  builtin: boolean;
}

/** Enabled profiles by name, in the order the main model sees them. */
export type AgentProfiles = ReadonlyMap<string, AgentProfile>;

type BuiltinProfile = Omit<AgentProfile, 'name' | 'builtin' | 'maxSteps'>;

export const BUILTIN_PROFILES: Readonly<Record<'researcher' | 'coder' | 'writer', BuiltinProfile>> = {
  researcher: {
    description: 'Finds and checks facts on the web (search, read pages) and reports them with their sources.',
    instructions:
      'You research one question. Search and read pages as needed, cross-check what matters, and answer with the facts found and the URL of each source. ' +
      'Say plainly what you could not find or verify; never invent facts, numbers or sources.',
    tools: ['web_search', 'fetch_url', 'get_current_time', 'calculator'],
  },
  coder: {
    description: "Writes, runs and fixes code in this conversation's workspace (files, Python, JavaScript, bash).",
    instructions:
      "You do one programming task in this conversation's workspace. Read the files you need, write code, run it, and fix it until it works. " +
      'Answer with what you did, the files you created or changed, and the results (exact numbers and output lines that matter).',
    tools: ['list_files', 'read_file', 'write_file', 'run_code', 'calculator'],
  },
  writer: {
    description: "Drafts and edits text (reports, summaries, messages, documentation), in the workspace's files when asked.",
    instructions:
      'You write or edit one piece of text. Use the facts given in the task and the workspace files you are pointed to; do not invent facts. ' +
      'When asked for a file, write it to the workspace and answer with its path and a short summary; otherwise answer with the text itself.',
    tools: ['list_files', 'read_file', 'write_file'],
  },
};

/** The built-ins merged with the file's `agents:` section (already validated by agentsFileSchema). */
export function resolveProfiles(file: AgentsFile | undefined): AgentProfiles {
  const out = new Map<string, AgentProfile>();
  const names = [...Object.keys(BUILTIN_PROFILES), ...Object.keys(file ?? {}).filter((n) => !(n in BUILTIN_PROFILES))];
  for (const name of names) {
    const written = file?.[name];
    if (written === false) continue;
    const builtin = (BUILTIN_PROFILES as Record<string, BuiltinProfile | undefined>)[name];
    const merged = { ...builtin, ...written } as BuiltinProfile & { max_steps?: number };
    out.set(name, {
      name,
      description: merged.description,
      instructions: merged.instructions,
      tools: [...new Set(merged.tools)],
      ...(merged.model !== undefined && { model: merged.model }),
      maxSteps: merged.max_steps ?? DEFAULT_MAX_STEPS,
      // A built-in whose tool list the operator rewrote is the operator's list now (checked strictly).
      builtin: builtin !== undefined && written?.tools === undefined,
    });
  }
  return out;
}

/** What a profile check needs to know about one tool (the registry's tool plus the operator's setting). */
export interface KnownTool {
  name: string;
  /** true, false, or 'depends' (decided per call from the arguments). */
  needsApproval: boolean | 'depends';
}

export interface ProfileCheck {
  /** One line per problem, for `config error:` and exit 2. */
  errors: string[];
  /** Tools taken out of a built-in profile (the operator gated them), one line each, for the log. */
  warnings: string[];
  profiles: AgentProfiles;
}

/**
 * Tools named by profiles against the tools that exist. A profile the operator wrote that names an
 * unknown tool, a tool that needs approval, or `delegate` is a config error. A built-in profile
 * loses a tool the operator made gated (with a warning) instead of stopping a start that never
 * mentioned agents.
 */
export function checkProfiles(profiles: AgentProfiles, tools: readonly KnownTool[]): ProfileCheck {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const errors: string[] = [];
  const warnings: string[] = [];
  const out = new Map<string, AgentProfile>();
  for (const p of profiles.values()) {
    const kept: string[] = [];
    for (const tool of p.tools) {
      const known = byName.get(tool);
      const problem =
        tool === DELEGATE_TOOL
          ? 'sub-agents cannot delegate (one level only); remove delegate from its tools'
          : !known
            ? `there is no tool named "${tool}"; use names from docs/tools.md (${[...byName.keys()].filter((n) => n !== DELEGATE_TOOL).join(', ')})`
            : known.needsApproval === true
              ? `${tool} needs a person's approval, and sub-agents cannot ask anyone; remove it (the main agent keeps it)`
              : undefined;
      if (!problem) kept.push(tool);
      else if (p.builtin && known) warnings.push(`agents.${p.name}: ${tool} is not given to the built-in ${p.name} sub-agent: ${problem.split(';')[0]}.`);
      else errors.push(`hermes.config agents.${p.name}.tools: ${problem}.`);
    }
    if (kept.length > 0) out.set(p.name, { ...p, tools: kept });
    else if (errors.length === 0) warnings.push(`agents.${p.name}: no usable tools are left, so the ${p.name} sub-agent is off.`);
  }
  return { errors, warnings, profiles: out };
}

/** A tool's approval rule: the operator's `tools.<name>.needsApproval` wins over the tool's own (a function is 'depends'). */
export function approvalRule(own: unknown, override: boolean | undefined): KnownTool['needsApproval'] {
  return override ?? (typeof own === 'function' ? 'depends' : own === true);
}

/** Tools as a profile check sees them. */
export function knownTools(tools: ReadonlyArray<{ name: string; needsApproval?: unknown }>, settings: Readonly<Record<string, { needsApproval?: boolean }>>): KnownTool[] {
  return tools.map((t) => ({ name: t.name, needsApproval: approvalRule(t.needsApproval, settings[t.name]?.needsApproval) }));
}
