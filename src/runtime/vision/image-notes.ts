import type { ImageRef } from '../../basics/types.js';
import { formatBytes } from '../../basics/text/format-bytes.js';

/**
 * What the model and the person are told about images, each in one place and kept apart: the
 * person learns what happened to their picture; the model learns what it can and cannot see, so it
 * never answers as if it had looked at an image it was not shown.
 */

const LABELS: Record<ImageRef['mime'], string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP' };

/** "attachments/cat.png (PNG, 640×480, 12.0 KB)" */
export function imageLabel(ref: ImageRef): string {
  const size = ref.width && ref.height ? `, ${ref.width}×${ref.height}` : '';
  return `${ref.path} (${LABELS[ref.mime]}${size}, ${formatBytes(ref.bytes)})`;
}

export const IMAGE_NOTES = {
  /** Vision off or not supported by the model: the image exists, the model cannot see it. */
  cannotSee: (refs: ImageRef[]) =>
    `[${refs.length === 1 ? 'Image' : 'Images'} ${refs.map(imageLabel).join(', ')}: you cannot see images with this model, only that the file exists. ` +
    'If the user asks about what it shows, say you cannot see images here; run_code can still process the file.]',
  /** Left out of this request (older than the newest few, or over the per-request size). */
  leftOut: (refs: ImageRef[]) =>
    `[${refs.length === 1 ? 'Image' : 'Images'} ${refs.map(imageLabel).join(', ')} shown earlier ${refs.length === 1 ? 'is' : 'are'} left out now to save space; view_image shows one again.]`,
  /** The file is gone or was replaced since it was shown. */
  missing: (refs: ImageRef[]) =>
    `[${refs.length === 1 ? 'Image' : 'Images'} ${refs.map(imageLabel).join(', ')} ${refs.length === 1 ? 'is' : 'are'} no longer in the workspace as ${refs.length === 1 ? 'it was' : 'they were'}, so not shown.]`,
  /** Heads the user message that carries view_image's pictures (tool results cannot carry images). */
  shownByTool: (tool: string, refs: ImageRef[]) => `[${tool} result: ${refs.map(imageLabel).join(', ')}. The image is attached to this message.]`,
  /** An attached image over HERMES_MAX_IMAGE_MB. */
  tooLarge: (name: string, bytes: number, max: number) =>
    `[Image ${name} (${formatBytes(bytes)}) is larger than the ${formatBytes(max)} limit for images, so it is saved as a file but not shown to you; the user has been told.]`,
  /** view_image's result text. */
  viewed: (ref: ImageRef) => `${imageLabel(ref)}: the image follows in the next message.`,
  notImage: (rel: string) => `"${rel}" is not a PNG, JPEG, GIF or WebP image (judged by its contents, not its name); use read_file or run_code for other files.`,
  viewTooLarge: (rel: string, bytes: number, max: number) =>
    `"${rel}" is ${formatBytes(bytes)}; images over ${formatBytes(max)} (HERMES_MAX_IMAGE_MB) cannot be shown. Make a smaller copy with run_code (e.g. scale it down) and view that.`,
} as const;

export const IMAGE_USER = {
  tooLarge: (name: string, bytes: number, max: number) =>
    `Your image ${name} (${formatBytes(bytes)}) is larger than the ${formatBytes(max)} limit for images I can look at: I saved it as a file, but I cannot see it.`,
} as const;
