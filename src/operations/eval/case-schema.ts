import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';

/**
 * The eval case file format (evals/*.yaml). One file may hold one case (a mapping) or several
 * (a list). Everything a case needs is in the file: the user messages, the local environment
 * (pages, webhook sink, clock), the approval decisions, what must hold at the end, and an optional
 * `script` of ideal model replies that only the scripted model plays.
 */

const argValue: z.ZodType<unknown> = z.unknown();

const expectedCall = z
  .object({
    name: z.string().min(1),
    /** Subset of the arguments; strings compare ignoring case, "/re/flags" is a regular expression. */
    args: z.record(z.string(), argValue).optional(),
    /** true: only a call that succeeded counts; false: only a failed one; absent: either. */
    ok: z.boolean().optional(),
  })
  .strict();

const wordList = z.array(z.string().min(1)).min(1);

const expectations = z
  .object({
    tools_called: z.array(expectedCall).optional(),
    /** The expected calls must appear in this order (other calls may come between them). */
    tools_in_order: z.boolean().optional(),
    tools_not_called: z.array(z.string().min(1)).optional(),
    sink: z
      .object({
        count: z.number().int().min(0).optional(),
        /** Subset of the JSON/form body of at least one request, or a string the raw body contains. */
        body: z.union([z.string(), z.record(z.string(), argValue)]).optional(),
        method: z.enum(['POST', 'PUT']).optional(),
      })
      .strict()
      .optional(),
    facts: z.object({ contains: wordList.optional(), none: wordList.optional(), count: z.number().int().min(0).optional() }).strict().optional(),
    answer: z
      .object({
        /** At least one of these in the final answer (case-insensitive). */
        any: wordList.optional(),
        /** Every one of these in the final answer. */
        all: wordList.optional(),
        /** None of these in anything the bot said during the case (secrets, false claims). */
        none: wordList.optional(),
      })
      .strict()
      .optional(),
    /** Most model calls the whole case may take. */
    max_steps: z.number().int().min(1).optional(),
    /** The final answer states a time, date or price while no tool succeeded: that is invented data. */
    no_realtime_claim_without_tool: z.boolean().optional(),
    approvals: z.array(z.object({ tool: z.string().min(1), outcome: z.enum(['approved', 'denied']) }).strict()).optional(),
  })
  .strict();

const page = z.union([
  z.string(),
  z.object({ body: z.string(), type: z.string().optional(), status: z.number().int().min(100).max(599).optional() }).strict(),
]);

/**
 * Who a script step answers: without `agent`, the main agent; with it, that sub-agent (a request is
 * told apart by its system prompt). `task` (words of the sub-agent's task, ignoring case) tells
 * parallel runs of the same agent apart. Steps answer in order within their own agent and task.
 */
const stepTarget = { agent: z.string().min(1).optional(), task: z.string().min(1).optional() };

const scriptStep = z.union([
  z.object({ say: z.string(), ...stepTarget }).strict(),
  z.object({ tool: z.string().min(1), args: z.union([z.string(), z.record(z.string(), argValue)]).optional(), say: z.string().optional(), ...stepTarget }).strict(),
  z
    .object({
      tools: z.array(z.object({ name: z.string().min(1), args: z.union([z.string(), z.record(z.string(), argValue)]).optional() }).strict()).min(1),
      say: z.string().optional(),
      ...stepTarget,
    })
    .strict(),
]);

const message = z.union([
  z.string().min(1),
  z.object({ text: z.string().min(1), from: z.string().min(1).optional() }).strict(),
]);

export const evalCaseSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'use lowercase letters, digits, - and _ (it is used on the command line)'),
    description: z.string().optional(),
    tags: z.array(z.string().min(1)).default([]),
    /** dm (default) or channel: in a channel every message mentions the bot. */
    conversation: z.enum(['dm', 'channel']).default('dm'),
    messages: z.array(message).min(1),
    /** Decisions for approval prompts, in the order the prompts appear. Missing ones are denied. */
    approvals: z.array(z.enum(['approve', 'deny'])).default([]),
    environment: z
      .object({
        /** ISO 8601 instant the injected clock reports for the whole case. */
        clock: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date-time like 2026-03-14T09:26:53Z').optional(),
        timezone: z.string().optional(),
        pages: z
          .record(z.string(), page)
          .superRefine((pages, ctx) => {
            for (const p of Object.keys(pages)) if (!p.startsWith('/')) ctx.addIssue({ code: 'custom', path: [p], message: 'page paths start with / (like /status)' });
          })
          .default({}),
        sink: z.object({ status: z.number().int().min(100).max(599).default(200), body: z.string().optional() }).strict().optional(),
      })
      .strict()
      .default({ pages: {} }),
    expect: expectations,
    script: z.array(scriptStep).optional(),
  })
  .strict();

export type EvalCase = z.infer<typeof evalCaseSchema>;
export type ScriptStep = z.infer<typeof scriptStep>;
export type Expectations = z.infer<typeof expectations>;
export type ExpectedCall = z.infer<typeof expectedCall>;

export class CaseFileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'CaseFileError';
  }
}

/** Parses one file's text; every problem names the file, the case and the field. */
export function parseCaseFile(text: string, file: string): EvalCase[] {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new CaseFileError([`${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`]);
  }
  const items = Array.isArray(raw) ? raw : [raw];
  const cases: EvalCase[] = [];
  const problems: string[] = [];
  items.forEach((item, i) => {
    const label = typeof (item as { name?: unknown })?.name === 'string' ? `case "${(item as { name: string }).name}"` : `case #${i + 1}`;
    const parsed = evalCaseSchema.safeParse(item);
    if (parsed.success) cases.push(parsed.data);
    else for (const issue of parsed.error.issues) problems.push(`${file}: ${label}: ${issue.path.join('.') || '(case)'}: ${issue.message}`);
  });
  if (problems.length) throw new CaseFileError(problems);
  return cases;
}

/** Loads every *.yaml / *.yml file in `dir` (sorted); duplicate names are an error. */
export async function loadCases(dir: string): Promise<EvalCase[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort();
  } catch (err) {
    throw new CaseFileError([`${dir}: cannot read the case folder (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  const all: EvalCase[] = [];
  const problems: string[] = [];
  for (const f of names) {
    try {
      all.push(...parseCaseFile(await readFile(path.join(dir, f), 'utf8'), path.join(dir, f)));
    } catch (err) {
      if (err instanceof CaseFileError) problems.push(...err.problems);
      else throw err;
    }
  }
  const seen = new Set<string>();
  for (const c of all) {
    if (seen.has(c.name)) problems.push(`${dir}: two cases are named "${c.name}"; names must be unique`);
    seen.add(c.name);
  }
  if (problems.length) throw new CaseFileError(problems);
  return all;
}

/** `--case a,b` and `--tag t` filters; both given → a case must pass both. */
export function selectCases(cases: EvalCase[], filter: { names?: string[]; tags?: string[] }): EvalCase[] {
  return cases.filter(
    (c) => (!filter.names?.length || filter.names.includes(c.name)) && (!filter.tags?.length || filter.tags.some((t) => c.tags.includes(t))),
  );
}

/** Replaces `{{web}}` (the local fixture web's origin) in every string of a value. */
export function withWebOrigin<T>(value: T, origin: string): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replaceAll('{{web}}', origin);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
