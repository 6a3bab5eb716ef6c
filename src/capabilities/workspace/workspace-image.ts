import { createHash } from 'node:crypto';
import type { ImageRef } from '../../basics/types.js';
import type { SessionWorkspace } from './workspace.js';
import { sniffImage } from '../../runtime/vision/image-type.js';
import { IMAGE_NOTES } from '../../runtime/vision/image-notes.js';

/**
 * An image in a session's workspace as the model may be shown it: the workspace's path rules and
 * regular-file checks apply (readBytes), the type comes from the bytes, and the size is capped.
 */
export type ImageRead = { ok: true; ref: ImageRef; data: Buffer } | { ok: false; reason: 'not_image' | 'too_large'; message: string; bytes: number };

export async function readWorkspaceImage(ws: SessionWorkspace, rel: string, maxImageBytes: number): Promise<ImageRead> {
  // Up to the workspace's own per-file limit, so a large image gets "too large", not a read error.
  const file = await ws.readBytes(rel, Math.max(maxImageBytes, ws.limits.maxFileBytes));
  const type = sniffImage(file.data.subarray(0, 64 * 1024));
  if (!type) return { ok: false, reason: 'not_image', message: IMAGE_NOTES.notImage(file.rel), bytes: file.data.length };
  if (file.data.length > maxImageBytes) {
    return { ok: false, reason: 'too_large', message: IMAGE_NOTES.viewTooLarge(file.rel, file.data.length, maxImageBytes), bytes: file.data.length };
  }
  const ref: ImageRef = {
    path: file.rel,
    mime: type.mime,
    bytes: file.data.length,
    sha256: createHash('sha256').update(file.data).digest('hex'),
    ...(type.width && type.height && { width: type.width, height: type.height }),
  };
  return { ok: true, ref, data: file.data };
}

/** view_image's answer for an image it shows (the image itself follows the tool results). */
export function viewedImageText(ref: ImageRef): string {
  return IMAGE_NOTES.viewed(ref);
}

/** The bytes of a ref as a data URL, or undefined when the file is gone or no longer the same image. */
export async function imageDataUrl(ws: SessionWorkspace, ref: ImageRef): Promise<string | undefined> {
  try {
    const file = await ws.readBytes(ref.path, ref.bytes);
    if (createHash('sha256').update(file.data).digest('hex') !== ref.sha256) return undefined;
    return `data:${ref.mime};base64,${file.data.toString('base64')}`;
  } catch {
    // Gone, replaced by a folder or a link, unreadable: all the same to the model, "not shown".
    return undefined;
  }
}
