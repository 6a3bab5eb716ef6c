import type { ChatMessage, ImageRef } from '../../basics/types.js';
import { IMAGE_NOTES } from './image-notes.js';

/**
 * Which images of a history go to the model in one request. Pure.
 *
 * - A model that cannot see images gets none: each is replaced by a line saying the file exists
 *   and that it cannot be seen (so it never pretends to have looked).
 * - Otherwise the newest images are kept, at most MAX_PROMPT_IMAGES and MAX_PROMPT_IMAGE_BYTES
 *   together (a request carries them base64-encoded, a third larger); older ones are replaced by a
 *   line naming them, and view_image can show one again.
 * The context window (src/runtime/context/context-window.ts) counts each kept image as IMAGE_TOKENS and, under
 * pressure, replaces the images of earlier turns the same way.
 */

export const MAX_PROMPT_IMAGES = 6;
export const MAX_PROMPT_IMAGE_BYTES = 20 * 1024 * 1024;
/**
 * What one image costs in the prompt budget. Servers count images differently (OpenAI: 85–1,105
 * tokens by tiles; Llama 3.2 Vision about 1,600; Qwen-VL by pixels): one fixed, generous figure.
 */
export const IMAGE_TOKENS = 1_500;

type WithImages = Extract<ChatMessage, { role: 'user' | 'tool' }>;

export function imagesOf(m: ChatMessage): ImageRef[] {
  return (m.role === 'user' || m.role === 'tool') && m.images?.length ? m.images : [];
}

/** The message without the given images, and a note about them added to its text. */
export function withoutImages(m: WithImages, drop: readonly ImageRef[], note: (refs: ImageRef[]) => string): WithImages {
  if (drop.length === 0) return m;
  const keep = (m.images ?? []).filter((r) => !drop.includes(r));
  const { images: _dropped, ...rest } = m;
  const content = `${m.content}\n${note([...drop])}`;
  return keep.length ? { ...rest, content, images: keep } : { ...rest, content };
}

export function promptImages(history: readonly ChatMessage[], canSee: boolean, limits = { maxImages: MAX_PROMPT_IMAGES, maxBytes: MAX_PROMPT_IMAGE_BYTES }): ChatMessage[] {
  if (!history.some((m) => imagesOf(m).length > 0)) return [...history];
  if (!canSee) return history.map((m) => (m.role === 'user' || m.role === 'tool' ? withoutImages(m, imagesOf(m), IMAGE_NOTES.cannotSee) : m));
  let count = 0;
  let bytes = 0;
  const out = [...history];
  for (let i = out.length - 1; i >= 0; i--) {
    const m = out[i]!;
    if (m.role !== 'user' && m.role !== 'tool') continue;
    const drop: ImageRef[] = [];
    // Newest first within a message too: the last image a person sent is the one they mean.
    for (const ref of [...imagesOf(m)].reverse()) {
      if (count < limits.maxImages && bytes + ref.bytes <= limits.maxBytes) {
        count += 1;
        bytes += ref.bytes;
      } else {
        drop.push(ref);
      }
    }
    out[i] = withoutImages(m, drop.reverse(), IMAGE_NOTES.leftOut);
  }
  return out;
}
