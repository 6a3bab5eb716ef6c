/**
 * Platform-neutral shapes shared by the gateway, the agent loop, tools and adapters.
 * Nothing here knows Slack, Discord or the OpenAI SDK.
 */

export type Platform = 'slack' | 'discord' | 'shell';

/** A verified person: always taken from the platform event, never from message text. */
export interface Speaker {
  platform: Platform;
  /** Slack team id, Discord guild id (or "@dm" for Discord DMs), "local" for the shell. */
  workspaceId: string;
  userId: string;
  /** Human-readable name, for tagging messages in shared sessions. */
  displayName?: string;
}

/** Where a message was written and where answers go. */
export interface Conversation {
  platform: Platform;
  workspaceId: string;
  channelId: string;
  /** Slack thread_ts or Discord thread channel id; absent for top-level / DM posts. */
  threadId?: string;
  /** The channel a thread belongs to, where the platform gives threads their own channel id (Discord). */
  parentChannelId?: string;
  isDm: boolean;
}

/** One user message as an adapter hands it to the gateway. */
export interface InboundMessage {
  /** Platform-unique id of this post (Slack: channel + ts; Discord: message id). Used for dedupe. */
  id: string;
  /**
   * Where the platform put this post in its conversation, as gateway/order-key.ts text (Slack `ts`,
   * Discord snowflake). Turns of one session run in this order on every instance; absent → the
   * time it was accepted.
   */
  order?: string;
  conversation: Conversation;
  speaker: Speaker;
  /** Text with the bot's own mention stripped; other mentions kept readable. */
  text: string;
  /** True when the bot was explicitly mentioned (from the platform's mention data, not the text). */
  mentioned: boolean;
  /** Platform message id the answer should reference (Discord reply, Slack thread parent). */
  replyTo?: string;
  /**
   * The message sits in a thread or reply chain with earlier messages the bot may not have seen
   * (Slack: a reply in a thread; Discord: a message in a thread, or a reply).
   */
  hasEarlier?: boolean;
  /** Platform id of the message this one replies to (Discord replies). */
  referenceId?: string;
  /** Mentions someone other than the bot (and not the bot): in a joined thread, talk between people. */
  mentionsOthers?: boolean;
  /** Written by another bot: never answered, but kept as context in a thread the bot has joined. */
  fromBot?: boolean;
  /** When it was written (epoch ms), for context kept without an answer. */
  at?: number;
  /** Files attached to the message, saved into the session's workspace before the turn. */
  attachments?: InboundAttachment[];
  /** The speaker's role ids where the platform has roles (Discord members), from the verified event. */
  roles?: string[];
  /**
   * The id of the adapter's receipt (`hermes_receipt`, this platform; src/gateway/receipts.ts) for
   * the delivery that brought this message. The gateway marks it done in the statement that marks
   * the message as accepted, so the two commit together; see `settlesReceipt` for when it did.
   */
  receipt?: string;
}

/** A file attached to an inbound message, as the verified platform event describes it. */
export interface InboundAttachment {
  /** Platform id of the file (Slack F…, Discord attachment id). */
  id: string;
  name: string;
  /** Size in bytes as the platform declared it (checked again while downloading). */
  size: number;
  mimeType?: string;
  /** Where the adapter downloads it from; only the adapter that produced it interprets it. */
  url: string;
}

/** A file the bot posts into a conversation (send_file). */
export interface OutboundFile {
  name: string;
  data: Buffer;
  /** Absolute host path (the terminal chat prints it instead of uploading). */
  path: string;
  comment?: string;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model produced it. */
  arguments: string;
}

/** The image types a vision model takes, decided from a file's bytes (src/runtime/vision/image-type.ts). */
export type ImageMime = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/**
 * An image shown to the model, by reference: the bytes stay in the session's workspace and are
 * read only to build a model request, so the session store, traces and dashboards hold this
 * record (name, type, size, hash) and never the image itself.
 */
export interface ImageRef {
  /** Workspace-relative path. */
  path: string;
  mime: ImageMime;
  bytes: number;
  /** SHA-256 of the bytes (hex): which image it was, and a check that the file has not changed since. */
  sha256: string;
  width?: number;
  height?: number;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | {
      role: 'user';
      content: string;
      /** Images attached to the message (vision models see them; others are told about them). */
      images?: ImageRef[];
      speaker?: Speaker;
      /** InboundMessage.id it came from (crash recovery). */
      inboundId?: string;
      /** Set on messages that carry outside text (thread context, others' later messages): where it came from. */
      outsideSource?: string;
    }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | {
      role: 'tool';
      toolCallId: string;
      name: string;
      content: string;
      /** The result is outside text from this source. */
      outsideSource?: string;
      /** Images the tool shows the model (view_image); sent in a user message right after the results. */
      images?: ImageRef[];
    };

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** Stable string key for a speaker: platform:workspace:user, each part URI-encoded. */
export function speakerKey(s: Pick<Speaker, 'platform' | 'workspaceId' | 'userId'>): string {
  return [s.platform, s.workspaceId, s.userId].map(encodeURIComponent).join(':');
}

/** Stable string key for a conversation (the session key before any `/hermes new`). */
export function conversationKey(c: Conversation): string {
  return [c.platform, c.workspaceId, c.channelId, c.threadId ?? '-'].map(encodeURIComponent).join(':');
}
