import { formatBytes } from './file-kind.js';

/**
 * The workspace quota is checked before every write the bot makes itself (write_file, attachments,
 * kept output), but code run in the sandbox writes directly: one file is capped, the total is not.
 * So a run can leave the workspace over its quota, and before this was said at the next write,
 * by a different tool, as if that write were the problem. Now the run that did it says so: the
 * model is told in the run's result and the person in the conversation, each in their own words.
 * The files stay: deleting what a run just made would lose work nobody asked to lose.
 */
export const OVER_QUOTA = {
  model: (used: number, quota: number) =>
    `The workspace now holds ${formatBytes(used)}, over its quota of ${formatBytes(quota)}. The files are kept, but nothing more can be ` +
    'written here (write_file, attachments, further run_code output) until some are deleted. Tell the user, and delete files that are not needed (for example with run_code) before writing more.',
  user: (used: number, quota: number) =>
    `This conversation's files now take ${formatBytes(used)}, more than the ${formatBytes(quota)} allowed. They are kept, but nothing new can be saved here ` +
    'until some are deleted: ask me to delete files you no longer need, or start a fresh conversation with /hermes new.',
} as const;

/** How far over the quota a workspace holding `used` bytes is; undefined when it is within. */
export function overQuota(used: number, quota: number): { used: number; quota: number } | undefined {
  return used > quota ? { used, quota } : undefined;
}
