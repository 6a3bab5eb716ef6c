import { chunkMarkdown } from '../../src/basics/text/chunk-markdown.js';

/** Slack accepts 40,000 characters; long walls are unreadable, so we cut far earlier. */
export const SLACK_CHUNK_CHARS = 3_800;

/** Rendered mrkdwn as Slack messages: parts shown apart in a channel, so each says `(i/n)`. */
export function chunkMrkdwn(text: string, limit = SLACK_CHUNK_CHARS): string[] {
  return chunkMarkdown(text, { limit, partMarkers: true });
}
