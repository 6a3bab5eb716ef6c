import type { z } from 'zod';

/**
 * Why this exists: a model fixes a bad tool call only as well as the error tells it what was
 * wrong. Handing it `ZodError.message` (a JSON dump of every issue) or a stack trace buried the
 * one useful fact — which field, what was expected — under noise, and models "fixed" it by
 * repeating the same call or dropping arguments. Union failures were worst: zod reports only
 * "Invalid input" for the field and hides what each alternative wanted.
 *
 * Now the model gets one line per problem, the path first, unions expanded:
 *
 *   Invalid arguments for send_webhook:
 *   url: required field is missing (expected string)
 *   method: Invalid option: expected one of "POST"|"PUT"
 *   headers.X-Id: Invalid input: expected string, received number
 *   Fix these and call send_webhook again.
 */

const MAX_LINES = 20;

/** `a.b[0].c`, or `(root)` for the arguments object itself. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(root)';
}

/** One `path: message` line per issue; union issues are expanded into their alternatives. */
export function issueLines(issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[] = []): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const alternatives = issue.errors.map((branch) => issueLines(branch, []).join('; '));
      lines.push(`${formatPath(path)}: ${issue.message}; none of the allowed forms matched (${alternatives.join(' | ')})`);
    } else if (issue.code === 'invalid_type' && / received undefined$/.test(issue.message)) {
      // zod's wording reads as if the model sent `undefined`; say plainly that the field is missing.
      lines.push(`${formatPath(path)}: required field is missing (expected ${issue.expected})`);
    } else if (issue.code === 'unrecognized_keys') {
      lines.push(`${formatPath(path)}: unknown field(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}; remove them`);
    } else {
      lines.push(`${formatPath(path)}: ${issue.message}`);
    }
  }
  return lines;
}

/** The whole message the model sees for arguments that failed validation. */
export function formatInvalidArgs(toolName: string, issues: readonly z.core.$ZodIssue[]): string {
  const lines = issueLines(issues);
  const shown = lines.slice(0, MAX_LINES);
  if (lines.length > shown.length) shown.push(`(and ${lines.length - shown.length} more problems)`);
  return [`Invalid arguments for ${toolName}:`, ...shown, `Fix these and call ${toolName} again.`].join('\n');
}
