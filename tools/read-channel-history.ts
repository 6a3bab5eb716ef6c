import * as z from 'zod';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';
import { CHANNEL_HISTORY_SOURCE, formatContextLines } from '../src/runtime/context/thread-context.js';
import { channelHistoryMissing } from '../src/basics/model-notes.js';

/**
 * read_channel_history: recent messages of the channel (or DM) the request came from. There is no
 * channel argument on purpose: the reader in ctx.history is bound to the conversation of the
 * verified event, so a prompt cannot steer the bot into another channel. What comes back was
 * written by other people: it is outside text, wrapped and counted like a fetched page.
 */

export const HISTORY_DEFAULT_LIMIT = 30;
export const HISTORY_MAX_LIMIT = 200;

const input = z.object({
  limit: z.number().int().min(1).max(HISTORY_MAX_LIMIT).optional().describe(`How many messages, newest first counted (default ${HISTORY_DEFAULT_LIMIT}, at most ${HISTORY_MAX_LIMIT})`),
  before: z.string().min(1).max(100).optional().describe('Only messages older than this message id (the "before" a previous call suggested), to page back'),
});

export const readChannelHistoryTool = defineTool({
  name: 'read_channel_history',
  description:
    'Read the recent messages of this channel or DM (the conversation the request came from; no other). Returns author, time and text, oldest first. ' +
    'Use for "what happened here today", "what did we decide". Messages in threads are not included, only the channel itself.',
  input,
  needsConversationHistory: true,
  // The text of up to 200 messages, plus the wrapper.
  maxResultChars: 40_000,
  async run(args, ctx) {
    if (!ctx.history) throw new Error('this conversation cannot be read here');
    const limit = args.limit ?? HISTORY_DEFAULT_LIMIT;
    const read = await ctx.history.read({ limit, ...(args.before && { before: args.before }) });
    if (!read.ok) throw new Error(channelHistoryMissing(read.problem));
    if (read.messages.length === 0) return args.before ? 'No older messages in this channel.' : 'This channel has no messages I can see.';
    const oldest = read.messages[0]!;
    const more = read.more ? `\n(older messages exist: call read_channel_history with before="${oldest.id}" to read them)` : '';
    return {
      summary: `${read.messages.length} message${read.messages.length === 1 ? '' : 's'}, oldest first:\n${formatContextLines(read.messages)}${more}`,
      outsideSource: CHANNEL_HISTORY_SOURCE,
      raw: { count: read.messages.length, more: read.more, oldest: oldest.id },
    };
  },
});

export default readChannelHistoryTool;
