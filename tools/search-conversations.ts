import * as z from 'zod';
import { defineTool, type ConversationHit } from '../src/capabilities/toolkit/tool-api.js';

/**
 * search_conversations: full-text search (and, with an embedding model, search by meaning) over
 * earlier messages the speaker may see: their own DMs with the bot (only when asked from a DM),
 * and the channels and threads they took part in; never another person's DM. ctx.conversations is
 * scoped to the verified speaker before the tool runs, so no argument can widen it. Hits are other
 * people's words: outside text, wrapped and counted like a fetched page.
 */

export const SEARCH_SOURCE = 'earlier conversations (search_conversations)';
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 30;
/** Per hit, so many hits fit the result. */
const HIT_CHARS = 600;

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The place as the person can recognise it: the chat renders `<#id>` as the channel's (or thread's) name. */
export function hitPlace(p: ConversationHit['place']): string {
  if (p.isDm) return p.platform === 'shell' ? 'the terminal chat' : 'your DM with me';
  if (p.platform === 'shell') return 'the terminal chat';
  const channel = `<#${p.parentChannelId ?? p.channelId}>`;
  if (!p.threadId) return channel;
  const thread = p.parentChannelId ? `thread <#${p.threadId}>` : 'a thread';
  return p.threadStartedAt !== undefined ? `${channel}, ${thread} started ${iso(p.threadStartedAt)}` : `${channel}, ${thread}`;
}

function hitLine(h: ConversationHit, i: number): string {
  const text = h.text.replace(/\s+/g, ' ').trim();
  const clipped = text.length > HIT_CHARS ? `${text.slice(0, HIT_CHARS)}…` : text;
  return `${i + 1}. ${iso(h.at)} in ${hitPlace(h.place)}, ${h.fromBot ? 'you (Hermes) answered' : `${h.author} wrote`}: ${clipped}`;
}

export const searchConversationsTool = defineTool({
  name: 'search_conversations',
  description:
    'Search earlier messages for words, names or topics: what was said before in this and other conversations the person speaking ' +
    'took part in (their channels and threads; their DMs with you only when asked in a DM). Use it when they refer to something ' +
    'discussed earlier ("what did we decide about the deploy", "the link Ada sent last week") or the summary of this conversation ' +
    'left out a detail. Returns the best matches, newest first among equals, each with time (UTC) and place.',
  input: z.object({
    query: z.string().min(1).max(500).describe('Words to look for, e.g. "staging database password rotation" or "Q3 budget decision"'),
    limit: z.number().int().min(1).max(MAX_LIMIT).optional().describe(`How many messages (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`),
  }),
  category: 'memory',
  // The hits come from the speaker's own places: shown to the model on their turns only.
  private: true,
  maxResultChars: 24_000,
  async run({ query, limit }, ctx) {
    if (!ctx.conversations) throw new Error('earlier conversations are not searchable here');
    const hits = await ctx.conversations.search(query, limit ?? DEFAULT_LIMIT);
    const scope = ctx.conversations.includesDms ? '' : ' (asked in a shared conversation, so the person\'s DMs with you were not searched)';
    if (hits.length === 0) return `No earlier message matches "${query.trim()}"${scope}. Try other or fewer words.`;
    return {
      summary: `${hits.length} earlier message${hits.length === 1 ? '' : 's'} matching "${query.trim()}", best first${scope}:\n${hits.map(hitLine).join('\n')}`,
      outsideSource: SEARCH_SOURCE,
      raw: { count: hits.length },
    };
  },
});

export default searchConversationsTool;
