/**
 * Which Slack events become an InboundMessage, and with what conversation. Pure.
 *
 * - `app_mention`: the platform's own mention signal. Top-level mentions open a thread on the
 *   mention, and that thread is the session.
 * - `message` in a DM: always forwarded (threaded only if the user wrote in a thread).
 * - `message` in a channel: thread replies, with `mentioned` from the text's mention token, and
 *   top-level posts without a mention (for `respond: all` channels; the gateway ignores them elsewhere).
 *   The gateway knows which threads the bot is part of and which channels answer everything (it
 *   persists the one, the policy says the other), so it gates; the `message` half of a top-level
 *   mention is dropped here because `app_mention` covers it.
 * - another bot's post in a channel thread: forwarded marked `fromBot`; the gateway keeps it as
 *   context in a thread the bot has joined and never answers it.
 * Both events of the mention + message pair carry id `channel:ts`, so the gateway dedupes them.
 */
import { orderKey } from '../../src/gateway/order-key.js';
import type { Conversation, InboundMessage } from '../../src/basics/types.js';
import { mentionedUserIds, mentionsUser } from './inbound-text.js';
import { attachmentsOf, type SlackFile } from './slack-files.js';

/** The fields we read from `app_mention` and `message` events (both have this shape on the wire). */
export interface SlackMessageLike {
  type: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  channel: string;
  channel_type?: string;
  username?: string;
  bot_profile?: { name?: string };
  /** message_changed: the message as it is now. */
  message?: { ts?: string; thread_ts?: string; text?: string };
  /** message_deleted (and message_changed): the message as it was. */
  previous_message?: { ts?: string; thread_ts?: string };
  deleted_ts?: string;
  /** Files shared with the message (subtype file_share, or an app_mention that carries files). */
  files?: SlackFile[];
}

export type EventVerdict =
  | { kind: 'forward'; message: Omit<InboundMessage, 'text'>; rawText: string }
  | { kind: 'skip'; reason: 'bot' | 'self' | 'subtype' | 'no_user' | 'channel_top_level' };

/** Subtypes that are still a person writing to us; everything else (edits, joins, deletes…) is not. */
const USER_SUBTYPES = new Set(['file_share', 'thread_broadcast', 'me_message']);

export function classifyEvent(ev: SlackMessageLike, workspaceId: string, botUserId: string, botId?: string): EventVerdict {
  if (ev.bot_id !== undefined) return otherBot(ev, workspaceId, botUserId, botId);
  if (ev.subtype !== undefined && !USER_SUBTYPES.has(ev.subtype)) return { kind: 'skip', reason: 'subtype' };
  if (!ev.user) return { kind: 'skip', reason: 'no_user' };
  if (ev.user === botUserId) return { kind: 'skip', reason: 'self' };

  const rawText = ev.text ?? '';
  const isDm = ev.channel_type === 'im' || (ev.channel_type === undefined && ev.channel.startsWith('D'));
  const inThread = ev.thread_ts !== undefined && ev.thread_ts !== ev.ts;
  const mentioned = ev.type === 'app_mention' || mentionsUser(rawText, botUserId);

  let threadId: string | undefined;
  if (isDm) threadId = inThread ? ev.thread_ts : undefined;
  else if (ev.type === 'app_mention') threadId = ev.thread_ts ?? ev.ts;
  else if (inThread) threadId = ev.thread_ts;
  // A top-level post that mentions the bot arrives as app_mention too, which answers it.
  else if (mentioned) return { kind: 'skip', reason: 'channel_top_level' };
  // Any other top-level post goes to the gateway, which answers it only where the channel's
  // policy says `respond: all` (threaded on itself, like a mention) and ignores it elsewhere.
  else threadId = ev.ts;

  const conversation: Conversation = { platform: 'slack', workspaceId, channelId: ev.channel, threadId, isDm };
  const attachments = attachmentsOf(ev.files);
  return {
    kind: 'forward',
    rawText,
    message: {
      id: `${ev.channel}:${ev.ts}`,
      order: slackOrder(ev.ts),
      conversation,
      speaker: { platform: 'slack', workspaceId, userId: ev.user },
      mentioned,
      replyTo: ev.ts,
      at: Math.round(Number(ev.ts) * 1000),
      ...(inThread && { hasEarlier: true }),
      ...(!mentioned && mentionedUserIds(rawText, botUserId).length > 0 && { mentionsOthers: true }),
      ...(attachments.length && { attachments }),
    },
  };
}

/** Another bot's post: context in channel threads only; our own posts and everything else are skipped. */
function otherBot(ev: SlackMessageLike, workspaceId: string, botUserId: string, botId: string | undefined): EventVerdict {
  if (ev.user === botUserId || (botId !== undefined && ev.bot_id === botId)) return { kind: 'skip', reason: 'self' };
  const inThread = ev.thread_ts !== undefined && ev.thread_ts !== ev.ts;
  const isDm = ev.channel_type === 'im' || (ev.channel_type === undefined && ev.channel.startsWith('D'));
  if (isDm || !inThread || (ev.subtype !== undefined && ev.subtype !== 'bot_message')) return { kind: 'skip', reason: 'bot' };
  return {
    kind: 'forward',
    rawText: ev.text ?? '',
    message: {
      id: `${ev.channel}:${ev.ts}`,
      conversation: { platform: 'slack', workspaceId, channelId: ev.channel, threadId: ev.thread_ts, isDm: false },
      speaker: { platform: 'slack', workspaceId, userId: ev.user ?? ev.bot_id ?? 'bot', displayName: ev.bot_profile?.name ?? ev.username ?? 'a bot' },
      mentioned: false,
      fromBot: true,
      at: Math.round(Number(ev.ts) * 1000),
    },
  };
}

/**
 * A message's `ts` ("1700000000.000100": seconds, then a 6-digit sequence Slack keeps unique per
 * channel) as the gateway's order key, so turns run in the order Slack posted the messages.
 */
export function slackOrder(ts: string): string | undefined {
  const m = /^(\d+)\.(\d{1,6})$/.exec(ts);
  if (!m) return undefined;
  return orderKey(BigInt(m[1]!) * 1_000_000n + BigInt(m[2]!.padEnd(6, '0')), ts);
}
