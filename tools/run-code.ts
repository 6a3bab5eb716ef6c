import * as z from 'zod';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';
import type { CodeSandbox, RunResult, StopReason } from '../src/capabilities/sandbox/code-sandbox.js';
import { MAX_CODE_TIMEOUT_MS } from '../src/settings/config.js';
import { OVER_QUOTA, overQuota } from '../src/capabilities/workspace/quota-text.js';

/**
 * run_code: Python, JavaScript or bash in the bubblewrap sandbox (src/capabilities/sandbox), in the session's
 * workspace. Offered only when the sandbox passed its start-up probe; there is no other way to run
 * code. It needs no approval by default — it is offline and can touch only the workspace — and an
 * operator can require one with tools.run_code.needsApproval.
 */

const MAX_CODE_CHARS = 100_000;
export const RUN_CODE_TOOL = 'run_code';

/** Model-facing words for each way a run is stopped from outside. */
export const STOP_MESSAGES: Record<StopReason, (r: RunResult, limits: RunCodeLimits) => string> = {
  timeout: (_r, l) => `It was stopped at the time limit (${l.timeoutS} s) and killed with everything it started. Make it faster, work on less data, or pass a larger timeout_s (at most ${MAX_CODE_TIMEOUT_MS / 1000}).`,
  memory: (_r, l) => `It was stopped for using more than the memory limit (${l.memoryMb} MB across all its processes). Process the data in smaller pieces.`,
  output: () => 'It was stopped for printing more than 8 MB. Write large results to a file and print a summary instead.',
  cancelled: () => 'It was cancelled before it finished (the turn was stopped).',
};

const SIGNAL_MESSAGES: Record<string, (l: RunCodeLimits) => string> = {
  SIGXCPU: (l) => `It used more CPU time than allowed (${l.timeoutS} s) and was killed.`,
  SIGXFSZ: () => 'It tried to write a file larger than the workspace quota and was killed.',
};

export interface RunCodeLimits {
  timeoutS: number;
  memoryMb: number;
}

export function formatRunResult(r: RunResult, limits: RunCodeLimits): string {
  const seconds = (r.durationMs / 1000).toFixed(2);
  const lines = [`exit code: ${r.exitCode ?? 'none'}${r.signal ? ` (killed by ${r.signal})` : ''} · ${seconds} s · timed out: ${r.timedOut ? 'yes' : 'no'}`];
  if (r.stoppedFor) lines.push(STOP_MESSAGES[r.stoppedFor](r, limits));
  else if (r.signal && SIGNAL_MESSAGES[r.signal]) lines.push(SIGNAL_MESSAGES[r.signal]!(limits));
  const f = r.files;
  if (f.created.length) lines.push(`files created: ${someNames(f.created)}`);
  if (f.changed.length) lines.push(`files changed: ${someNames(f.changed)}`);
  if (f.deleted.length) lines.push(`files deleted: ${someNames(f.deleted)}`);
  if (f.truncated) lines.push('(the workspace has too many files to compare them all)');
  lines.push(`stdout:\n${r.stdout || '(empty)'}`);
  lines.push(`stderr:\n${r.stderr || '(empty)'}`);
  if (r.fullOutput) lines.push(`The output was long; head and tail are shown. All of it is in ${r.fullOutput} (read_file with offset to page through it).`);
  else if (r.fullOutputProblem) lines.push(`The output was long; head and tail are shown. The full output could not be kept: ${r.fullOutputProblem}`);
  return lines.join('\n');
}

/** Names of files a run touched; a run that makes thousands would otherwise crowd out its output. */
const MAX_NAMES_LISTED = 50;

function someNames(names: string[]): string {
  if (names.length <= MAX_NAMES_LISTED) return names.join(', ');
  return `${names.slice(0, MAX_NAMES_LISTED).join(', ')} and ${names.length - MAX_NAMES_LISTED} more (list_files shows them)`;
}

export function runCodeTool(sandbox: CodeSandbox, opts: { defaultTimeoutMs: number; memoryMb: number }) {
  const languages = sandbox.languages;
  const defaultS = Math.round(opts.defaultTimeoutMs / 1000);
  return defineTool({
    name: RUN_CODE_TOOL,
    description:
      `Run ${languages.join(', ')} code in an offline sandbox whose working directory is this conversation's workspace (files you write there stay; list_files shows them). ` +
      `No network, no access outside the workspace, ${opts.memoryMb} MB memory, 64 processes, default ${defaultS} s. ` +
      'python is python3 (standard library), javascript is Node.js (CommonJS), bash has the usual command-line tools. Returns the exit code, stdout, stderr, duration and the files created or changed.',
    input: z.object({
      language: z.enum(['python', 'javascript', 'bash']).describe(`One of: ${languages.join(', ')}`),
      code: z.string().min(1).max(MAX_CODE_CHARS).describe('The program to run'),
      timeout_s: z.number().int().min(1).max(MAX_CODE_TIMEOUT_MS / 1000).optional().describe(`Wall-clock limit in seconds (default ${defaultS}, at most ${MAX_CODE_TIMEOUT_MS / 1000})`),
    }),
    category: 'general',
    sideEffects: true,
    // The run's own limit decides; the executor's timeout only has to be longer than the longest run.
    timeoutMs: MAX_CODE_TIMEOUT_MS + 30_000,
    maxResultChars: 24_000,
    async run(args, ctx) {
      if (!ctx.workspace) throw new Error('There is no workspace in this conversation, so code cannot run here.');
      if (!languages.includes(args.language)) throw new Error(`${args.language} is not installed in this sandbox; use one of: ${languages.join(', ')}`);
      const timeoutMs = args.timeout_s !== undefined ? args.timeout_s * 1000 : opts.defaultTimeoutMs;
      const result = await sandbox.run({ workspace: ctx.workspace, language: args.language, code: args.code, timeoutMs, signal: ctx.signal });
      ctx.log.info({ language: args.language, exitCode: result.exitCode, durationMs: result.durationMs, stoppedFor: result.stoppedFor }, 'run_code finished');
      const summary = formatRunResult(result, { timeoutS: timeoutMs / 1000, memoryMb: opts.memoryMb });
      const over = overQuota(result.workspaceUsage, ctx.workspace.limits);
      if (!over) return { summary, raw: result };
      await ctx.notice?.(OVER_QUOTA.user(over));
      return { summary: `${OVER_QUOTA.model(over)}\n${summary}`, raw: result };
    },
  });
}
