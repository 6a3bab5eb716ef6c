import { chunkMarkdown } from '../../src/basics/text/chunk-markdown.js';

export const DISCORD_MESSAGE_LIMIT = 2000;

/** A Markdown answer as Discord messages: consecutive messages are grouped, so no part markers. */
export function splitMessage(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  return chunkMarkdown(text, { limit });
}
