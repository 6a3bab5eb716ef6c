import {
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ChannelType,
  type ChannelFlags,
  type RoleFlags,
  type GuildMemberFlags,
  ComponentType,
  GuildDefaultMessageNotifications,
  GuildExplicitContentFilter,
  GuildHubType,
  GuildMFALevel,
  GuildNSFWLevel,
  GuildPremiumTier,
  GuildSystemChannelFlags,
  GuildVerificationLevel,
  InteractionContextType,
  InteractionType,
  Locale,
  MessageType,
  type APIAttachment,
  type APIChatInputApplicationCommandInteraction,
  type APITextChannel,
  type APIInteractionGuildMember,
  type APIMessage,
  type APIMessageComponentButtonInteraction,
  type APIThreadChannel,
  type APIUser,
  type GatewayGuildCreateDispatchData,
  type GatewayMessageCreateDispatchData,
} from 'discord-api-types/v10';

/** Payload builders for the fake Discord, typed against discord-api-types so they match the wire. */

const NO_CHANNEL_FLAGS = 0 as ChannelFlags;
const NO_MEMBER_FLAGS = 0 as GuildMemberFlags;

const DISCORD_EPOCH = 1420070400000n;
let increment = 0n;

/** Real-looking snowflakes: discord.js derives timestamps (interaction age) from them. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) % 4096n;
  return (((BigInt(at) - DISCORD_EPOCH) << 22n) | increment).toString();
}

export function user(id: string, username: string, bot = false): APIUser {
  return { id, username, global_name: username, discriminator: '0', avatar: null, ...(bot && { bot: true }) };
}

export function textChannel(id: string, guildId: string, name: string): APITextChannel {
  const channel: APITextChannel = { id, type: ChannelType.GuildText, guild_id: guildId, name, position: 0, permission_overwrites: [], nsfw: false, parent_id: null, topic: null, last_message_id: null, rate_limit_per_user: 0, flags: NO_CHANNEL_FLAGS };
  return channel;
}

export function thread(id: string, guildId: string, parentId: string, name: string, ownerId: string): APIThreadChannel {
  return {
    id,
    type: ChannelType.PublicThread,
    guild_id: guildId,
    parent_id: parentId,
    name,
    owner_id: ownerId,
    permission_overwrites: [],
    nsfw: false,
    last_message_id: null,
    rate_limit_per_user: 0,
    flags: NO_CHANNEL_FLAGS,
    applied_tags: [],
    message_count: 0,
    member_count: 1,
    thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false },
  };
}

const roleOf = (id: string, name: string) => ({ id, name, color: 0, colors: { primary_color: 0, secondary_color: null, tertiary_color: null }, hoist: false, icon: null, unicode_emoji: null, position: 0, permissions: '68608', managed: false, mentionable: false, flags: 0 as RoleFlags });

export function guildCreate(id: string, name: string, channels: APITextChannel[], threads: APIThreadChannel[], botUser: APIUser, extraRoles: Array<{ id: string; name: string }> = []): GatewayGuildCreateDispatchData {
  const guild: GatewayGuildCreateDispatchData = {
    id,
    name,
    icon: null,
    splash: null,
    discovery_splash: null,
    owner_id: '1',
    region: 'europe',
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: GuildVerificationLevel.None,
    default_message_notifications: GuildDefaultMessageNotifications.OnlyMentions,
    explicit_content_filter: GuildExplicitContentFilter.Disabled,
    roles: [roleOf(id, '@everyone'), ...extraRoles.map((r) => roleOf(r.id, r.name))],
    emojis: [],
    features: [],
    mfa_level: GuildMFALevel.None,
    application_id: null,
    system_channel_id: null,
    system_channel_flags: GuildSystemChannelFlags.SuppressJoinNotifications,
    rules_channel_id: null,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: GuildPremiumTier.None,
    preferred_locale: Locale.EnglishUS,
    public_updates_channel_id: null,
    nsfw_level: GuildNSFWLevel.Default,
    stickers: [],
    premium_progress_bar_enabled: false,
    hub_type: null as GuildHubType | null,
    safety_alerts_channel_id: null,
    incidents_data: null,
    joined_at: new Date().toISOString(),
    large: false,
    member_count: 2,
    members: [{ user: botUser, roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: NO_MEMBER_FLAGS }],
    channels,
    threads,
    presences: [],
    voice_states: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    unavailable: false,
  };
  return guild;
}

export interface IncomingMessage {
  id: string;
  channelId: string;
  guildId?: string;
  author: APIUser;
  content: string;
  mentions: APIUser[];
  dm?: boolean;
  /** The message this one replies to (a Discord reply). */
  replyTo?: string;
  attachments?: APIAttachment[];
  /** The author's role ids in the guild (member.roles). */
  roles?: string[];
}

export function messageCreate(m: IncomingMessage): GatewayMessageCreateDispatchData {
  return {
    id: m.id,
    channel_id: m.channelId,
    ...(m.guildId !== undefined && {
      guild_id: m.guildId,
      member: { roles: m.roles ?? [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 },
    }),
    author: m.author,
    content: m.content,
    timestamp: new Date().toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: m.mentions,
    mention_roles: [],
    attachments: m.attachments ?? [],
    embeds: [],
    pinned: false,
    type: m.replyTo ? MessageType.Reply : MessageType.Default,
    ...(m.replyTo && { message_reference: { message_id: m.replyTo, channel_id: m.channelId, ...(m.guildId && { guild_id: m.guildId }) } }),
    ...(m.dm && { channel_type: ChannelType.DM }),
  } as GatewayMessageCreateDispatchData;
}

function member(u: APIUser, roles: string[] = []): APIInteractionGuildMember {
  const m: APIInteractionGuildMember = { user: u, roles, joined_at: new Date().toISOString(), deaf: false, mute: false, flags: NO_MEMBER_FLAGS, permissions: '68608' };
  return m;
}

interface InteractionBase {
  applicationId: string;
  user: APIUser;
  channelId: string;
  guildId?: string;
  channelType?: ChannelType;
  /** The member's role ids (guild interactions). */
  roles?: string[];
}

function base(i: InteractionBase) {
  const id = snowflake();
  return {
    id,
    application_id: i.applicationId,
    token: `tok-${id}`,
    version: 1 as const,
    app_permissions: '68608',
    locale: Locale.EnglishUS,
    entitlements: [],
    authorizing_integration_owners: {},
    attachment_size_limit: 8_000_000,
    channel_id: i.channelId,
    ...(i.guildId !== undefined
      ? { guild_id: i.guildId, member: member(i.user, i.roles), guild_locale: Locale.EnglishUS, context: InteractionContextType.Guild }
      : { user: i.user, context: InteractionContextType.BotDM }),
    channel: { id: i.channelId, type: i.channelType ?? (i.guildId ? ChannelType.GuildText : ChannelType.DM) },
  };
}

export function buttonClick(i: InteractionBase & { message: APIMessage; customId: string }): APIMessageComponentButtonInteraction {
  return {
    ...base(i),
    type: InteractionType.MessageComponent,
    message: i.message,
    data: { custom_id: i.customId, component_type: ComponentType.Button },
  } as APIMessageComponentButtonInteraction;
}

export function slashCommand(i: InteractionBase & { commandId: string; text: string }): APIChatInputApplicationCommandInteraction {
  return {
    ...base(i),
    type: InteractionType.ApplicationCommand,
    data: {
      id: i.commandId,
      name: 'hermes',
      type: ApplicationCommandType.ChatInput,
      options: [{ type: ApplicationCommandOptionType.String, name: 'text', value: i.text }],
    },
  } as APIChatInputApplicationCommandInteraction;
}
