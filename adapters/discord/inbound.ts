import { GuildMember, MessageType, type APIInteractionGuildMember, type Message, type User } from 'discord.js';
import { orderKey } from '../../src/gateway/order-key.js';
import type { Conversation, InboundMessage, Speaker } from '../../src/basics/types.js';
import { attachmentsOf } from './discord-files.js';

/**
 * Discord message → InboundMessage. Who spoke, where, and whether the bot was mentioned all come
 * from the event's structured data (author, channel, `mentions`), never from the text.
 * The gateway decides whether to answer (DMs always; channels when mentioned; threads it is part
 * of); here we only drop what is never for us: ourselves, system messages, and other bots outside
 * threads. Another bot's post in a thread is handed over marked `fromBot`: the gateway keeps it as
 * context in a thread the bot joined and never answers it.
 */

/** Speaker.workspaceId for DMs, which belong to no guild. */
export const DM_WORKSPACE = '@dm';

export function toInbound(message: Message, botId: string): InboundMessage | null {
  if (message.author.id === botId || message.system) return null;
  const isThread = message.channel.isThread();
  const fromBot = message.author.bot || message.webhookId !== null;
  if (fromBot && !isThread) return null;
  if (message.type !== MessageType.Default && message.type !== MessageType.Reply) return null;

  const conversation = conversationOf(message.channelId, message.guildId, isThread, message.channel.isThread() ? message.channel.parentId : null);
  const mentioned = !fromBot && message.mentions.users.has(botId);
  const text = readableText(message.content, botId, message.mentions.users);
  if (text === '' && message.attachments.size === 0) return null;
  const referenceId = message.reference?.messageId;
  const others = [...message.mentions.users.keys()].some((id) => id !== botId);

  const attachments = attachmentsOf(message);
  return {
    id: message.id,
    order: snowflakeOrder(message.id),
    conversation,
    speaker: speakerOf(message.author, message.guildId, message.member?.displayName),
    text: text === '' ? `(sent ${[...message.attachments.values()].map((a) => a.name).join(', ') || 'an attachment'})` : text,
    mentioned,
    replyTo: message.id,
    at: message.createdTimestamp,
    ...((isThread || referenceId) && { hasEarlier: true }),
    ...(referenceId && { referenceId }),
    ...(!mentioned && others && { mentionsOthers: true }),
    ...(fromBot && { fromBot: true }),
    ...(attachments.length && { attachments }),
    ...(message.member && { roles: roleIdsOf(message.member) }),
  };
}

/**
 * The member's role ids as the event gave them (HERMES_ALLOW `discord:role:<id>`). Interactions
 * may carry the raw API member instead of a cached GuildMember; both say the same.
 */
export function roleIdsOf(member: GuildMember | APIInteractionGuildMember | null | undefined): string[] | undefined {
  if (!member) return undefined;
  return member instanceof GuildMember ? [...member.roles.cache.keys()] : [...member.roles];
}

/**
 * A thread is its own session: its id is both the channel to post in and the thread key. Its
 * parent channel is kept so channel rules (HERMES_ALLOW) cover the channel's threads too.
 */
export function conversationOf(channelId: string, guildId: string | null, isThread: boolean, parentId?: string | null): Conversation {
  if (guildId === null) return { platform: 'discord', workspaceId: DM_WORKSPACE, channelId, isDm: true };
  return { platform: 'discord', workspaceId: guildId, channelId, ...(isThread && { threadId: channelId }), ...(isThread && parentId && { parentChannelId: parentId }), isDm: false };
}

export function speakerOf(user: User, guildId: string | null, memberName?: string): Speaker {
  return {
    platform: 'discord',
    workspaceId: guildId ?? DM_WORKSPACE,
    userId: user.id,
    displayName: memberName ?? user.globalName ?? user.username,
  };
}

/**
 * Removes the bot's own mention (`<@id>` and the legacy `<@!id>`) and shows other user mentions as
 * `@Name (<@id>)`: the name to reason with, and the raw mention so an answer can mention them
 * (it renders as a mention but pings nobody: see render.ts).
 */
export function readableText(content: string, botId: string, mentionedUsers: ReadonlyMap<string, Pick<User, 'username' | 'globalName'>>): string {
  return content
    .replace(/<@!?(\d+)>/g, (whole, id: string) => {
      if (id === botId) return '';
      const user = mentionedUsers.get(id);
      return user ? `@${user.globalName ?? user.username} (<@${id}>)` : whole;
    })
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

/** Discord's epoch (2015-01-01) in Unix milliseconds: a snowflake's top bits count from it. */
const DISCORD_EPOCH_MS = 1_420_070_400_000n;

/**
 * A snowflake as the gateway's order key: its time (the top 42 bits, milliseconds since Discord's
 * epoch) and then the whole id, zero-padded, which orders messages of the same millisecond the way
 * Discord numbered them.
 */
export function snowflakeOrder(id: string): string | undefined {
  if (!/^\d{1,20}$/.test(id)) return undefined;
  const ms = (BigInt(id) >> 22n) + DISCORD_EPOCH_MS;
  return orderKey(ms * 1000n, id.padStart(20, '0'));
}
