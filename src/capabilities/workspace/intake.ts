import path from 'node:path';
import type { Logger } from 'pino';
import type { OutboundPort } from '../../basics/ports.js';
import type { InboundAttachment } from '../../basics/types.js';
import { formatBytes, mimeFromName } from './file-kind.js';
import { ATTACHMENTS_DIR, WorkspaceError, type SessionWorkspace } from './workspace.js';

/**
 * Files attached to a message are saved into the session's workspace before the turn starts, so
 * the model's first step can already read them. The model is told each file's name, size, type and
 * path; the person is told, in the conversation, about any file that was not taken and why.
 */

/** More files than this in one message are not taken (a person sending 50 files means something else). */
export const MAX_ATTACHMENTS_PER_MESSAGE = 10;
const DOWNLOAD_TIMEOUT_MS = 120_000;

export interface IntakeResult {
  /** Appended to the user's message for the model. */
  modelNote?: string;
  /** Said to the person before the answer (files not taken). */
  userNotice?: string;
}

type Skip = { name: string; size: number; why: string };

/** Person-facing and model-facing words for a file that was not taken, kept apart. */
const SKIP = {
  tooLarge: (maxBytes: number) => `larger than the ${formatBytes(maxBytes)} limit per file`,
  quota: (quota: number) => `the conversation's workspace is full (${formatBytes(quota)})`,
  noDownload: 'this platform cannot hand files to me',
  tooMany: `more than ${MAX_ATTACHMENTS_PER_MESSAGE} files in one message`,
  failed: 'the download failed',
};

export function safeFileName(name: string): string {
  const base = path.basename(name.replace(/\\/g, '/')).replace(/[\u0000-\u001f<>:"|?*]/g, '_').trim();
  const cleaned = base.replace(/^\.+/, '').slice(-120);
  return cleaned || 'file';
}

export async function saveAttachments(opts: {
  attachments: InboundAttachment[];
  workspace: SessionWorkspace;
  port: OutboundPort | undefined;
  signal?: AbortSignal;
  log: Logger;
}): Promise<IntakeResult> {
  const { workspace, port, log } = opts;
  const maxBytes = workspace.limits.maxFileBytes;
  const saved: string[] = [];
  const skipped: Skip[] = [];
  for (const [i, att] of opts.attachments.entries()) {
    const name = safeFileName(att.name);
    if (i >= MAX_ATTACHMENTS_PER_MESSAGE) {
      skipped.push({ name, size: att.size, why: SKIP.tooMany });
      continue;
    }
    if (att.size > maxBytes) {
      skipped.push({ name, size: att.size, why: SKIP.tooLarge(maxBytes) });
      continue;
    }
    if (!port?.fetchAttachment) {
      skipped.push({ name, size: att.size, why: SKIP.noDownload });
      continue;
    }
    try {
      const rel = await freePath(workspace, name, att.size);
      const signal = AbortSignal.any([AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), ...(opts.signal ? [opts.signal] : [])]);
      const body = await port.fetchAttachment(att, { maxBytes, signal });
      const r = await workspace.writeStream(rel, body, maxBytes);
      const type = att.mimeType ?? mimeFromName(name) ?? 'unknown type';
      saved.push(`- ${r.rel} (${formatBytes(r.bytes)}, ${type})`);
    } catch (err) {
      const why =
        err instanceof WorkspaceError && err.limit === 'file_size' ? SKIP.tooLarge(maxBytes)
        : err instanceof WorkspaceError && err.limit === 'quota' ? SKIP.quota(workspace.limits.quotaBytes)
        : SKIP.failed;
      log.warn({ err: (err as Error).message, file: att.id }, 'attachment not saved');
      skipped.push({ name, size: att.size, why });
    }
  }
  const notes: string[] = [];
  if (saved.length) notes.push(`[Files the user attached, saved in the workspace (read_file and run_code can use them):\n${saved.join('\n')}]`);
  if (skipped.length) notes.push(`[Attached files that were NOT saved (the user has been told): ${skipped.map((s) => `${s.name} (${formatBytes(s.size)}): ${s.why}`).join('; ')}]`);
  return {
    ...(notes.length && { modelNote: notes.join('\n') }),
    ...(skipped.length && {
      userNotice: skipped.length === 1
        ? `I could not take your file ${skipped[0]!.name} (${formatBytes(skipped[0]!.size)}): ${skipped[0]!.why}.`
        : `I could not take these files: ${skipped.map((s) => `${s.name} (${formatBytes(s.size)}): ${s.why}`).join('; ')}.`,
    }),
  };
}

/** attachments/<name>, or name-2.ext … when a different file of that name is already there. */
async function freePath(workspace: SessionWorkspace, name: string, size: number): Promise<string> {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  const listed = await workspace.list(ATTACHMENTS_DIR).catch(() => ({ entries: [] }));
  for (let n = 1; n <= 100; n++) {
    const rel = `${ATTACHMENTS_DIR}/${n === 1 ? name : `${stem}-${n}${ext}`}`;
    const existing = listed.entries.find((e) => e.rel === rel);
    // The same name and size again is the same file delivered again (a redelivery after a restart).
    if (!existing || (existing.type === 'file' && existing.size === size)) return rel;
  }
  throw new WorkspaceError(`too many files named ${name}`);
}
