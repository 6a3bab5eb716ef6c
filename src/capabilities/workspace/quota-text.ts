import { formatBytes } from './file-kind.js';
import type { WorkspaceUsage } from './walk.js';

/**
 * The workspace quota (bytes, and files and folders) is checked before every write the bot makes
 * itself (write_file, attachments, kept output), but code run in the sandbox writes directly: one
 * file is capped, the total is not. So a run can leave the workspace over its quota, and before
 * this was said at the next write, by a different tool, as if that write were the problem. Now the
 * run that did it says so: the model is told in the run's result and the person in the
 * conversation, each in their own words. The files stay: deleting what a run just made would lose
 * work nobody asked to lose.
 */

/** How a workspace is over its limits, when it is. */
export type OverQuota =
  | { kind: 'bytes'; used: number; quota: number }
  | { kind: 'entries'; cap: number }
  /** Part of the tree could not be read, so its size is unknown: treated as over. */
  | { kind: 'uncounted' };

/** "1.2 MB, over its quota of 1.0 MB" / "more than 10,000 files and folders (the limit is 10,000)". */
function overWords(over: OverQuota): string {
  if (over.kind === 'bytes') return `${formatBytes(over.used)}, over its quota of ${formatBytes(over.quota)}`;
  if (over.kind === 'entries') return `more than ${entriesWords(over.cap)} (the limit is ${over.cap.toLocaleString('en-US')})`;
  return 'files in a folder that cannot be read, so its size cannot be counted';
}

export function entriesWords(n: number): string {
  return `${n.toLocaleString('en-US')} files and folders`;
}

export const OVER_QUOTA = {
  model: (over: OverQuota) =>
    `The workspace now holds ${overWords(over)}. The files are kept, but nothing more can be ` +
    'written here (write_file, attachments, further run_code output) until some are deleted. Tell the user, and delete files that are not needed (for example with run_code) before writing more.',
  user: (over: OverQuota) =>
    `This conversation's files now take ${over.kind === 'bytes' ? `${formatBytes(over.used)}, more than the ${formatBytes(over.quota)} allowed` : overWords(over)}. They are kept, but nothing new can be saved here ` +
    'until some are deleted: ask me to delete files you no longer need, or start a fresh conversation with /hermes new.',
  /** A one-line state for listings. */
  listing: (over: OverQuota) => `The workspace holds ${overWords(over)}; nothing more can be written until files are deleted.`,
} as const;

/**
 * How far over its limits a workspace is; undefined when it is within. A count that is incomplete
 * for another reason than the cap (a folder it could not read) counts as over too, because an
 * unread folder could hide anything.
 */
export function overQuota(usage: WorkspaceUsage, limits: { quotaBytes: number; maxEntries: number }): OverQuota | undefined {
  if (usage.entries > limits.maxEntries) return { kind: 'entries', cap: limits.maxEntries };
  if (!usage.complete) return { kind: 'uncounted' };
  return usage.bytes > limits.quotaBytes ? { kind: 'bytes', used: usage.bytes, quota: limits.quotaBytes } : undefined;
}
