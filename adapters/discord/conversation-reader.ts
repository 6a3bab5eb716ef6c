import { DiscordAPIError, RateLimitError, type REST } from 'discord.js';
import { MessageType, Routes, type APIGuildMember, type APIMessage } from 'discord-api-types/v10';
import type { ContextMessage, ContextRead, ContextReadProblem, ConversationReader } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';

/**
 * Reading a Discord conversation for context over REST (never the message cache, which is off):
 * a thread's earlier messages (paged back with `before`), the message a reply refers to (followed
 * up its reply chain a few hops, and a thread's starter message in its parent channel), and a
 * channel's recent messages. Names are the member's nickname in the guild when it has one, else the
 * user's display name; bots are labelled; files, embeds and stickers are described.
 *
 * discord.js queues rate-limited requests itself; a read as a whole gets `deadlineMs` (default
 * 10 s), after which it gives up and the turn goes on without it.
 */

const PAGE = 100;
const MAX_CHAIN_HOPS = 5;
const MAX_NICK_LOOKUPS = 20;
const NICK_CACHE = 2_000;
const CONTENT_TYPES = new Set([MessageType.Default, MessageType.Reply, MessageType.ChatInputCommand, MessageType.ThreadStarterMessage]);
const PERMISSION_FIX = 'give the bot the View Channel and Read Message History permissions in this channel (Server Settings → Roles, or the channel\'s permissions)';

export interface DiscordReaderDeps {
  rest: REST;
  log: Logger;
  /** The bot's own user id, once connected. */
  botId: () => string | undefined;
  deadlineMs?: number;
}

export function createDiscordReader(deps: DiscordReaderDeps): ConversationReader {
  const nicks = new Map<string, string | null>();
  const deadlineMs = deps.deadlineMs ?? 10_000;

  const get = <T>(route: `/${string}`, query?: Record<string, string>): Promise<T> =>
    deps.rest.get(route, query ? { query: new URLSearchParams(query) } : {}) as Promise<T>;

  async function page(channelId: string, limit: number, before?: string): Promise<APIMessage[]> {
    return get<APIMessage[]>(Routes.channelMessages(channelId), { limit: String(Math.min(PAGE, limit)), ...(before && { before }) });
  }

  /** Newest-first pages back from `before` until `limit` messages (bounded by the limit itself). */
  async function back(channelId: string, limit: number, before?: string): Promise<{ messages: APIMessage[]; more: boolean }> {
    const out: APIMessage[] = [];
    let cursor = before;
    for (let pages = 0; out.length < limit && pages < Math.ceil(limit / PAGE); pages++) {
      const batch = await page(channelId, limit - out.length, cursor);
      out.push(...batch);
      if (batch.length < Math.min(PAGE, limit - out.length + batch.length)) return { messages: out, more: false };
      cursor = batch.at(-1)?.id;
    }
    return { messages: out, more: out.length >= limit };
  }

  /** The message `id` in `channelId` and what it replies to, a few hops up; stops at the first it cannot fetch. */
  async function chain(channelId: string, id: string, hops: number): Promise<APIMessage[]> {
    const out: APIMessage[] = [];
    let next: { channel: string; id: string } | undefined = { channel: channelId, id };
    while (next && out.length < hops) {
      let m: APIMessage;
      try {
        m = await get<APIMessage>(Routes.channelMessage(next.channel, next.id));
      } catch (err) {
        if (out.length === 0) throw err;
        break;
      }
      out.push(m);
      next = m.message_reference?.message_id ? { channel: m.message_reference.channel_id ?? next.channel, id: m.message_reference.message_id } : undefined;
    }
    return out;
  }

  async function nickOf(guildId: string, userId: string, budget: { left: number }): Promise<string | undefined> {
    const key = `${guildId}:${userId}`;
    if (nicks.has(key)) return nicks.get(key) ?? undefined;
    if (budget.left <= 0) return undefined;
    budget.left--;
    try {
      const member = await get<APIGuildMember>(Routes.guildMember(guildId, userId));
      if (nicks.size >= NICK_CACHE) nicks.delete(nicks.keys().next().value!);
      nicks.set(key, member.nick ?? null);
      return member.nick ?? undefined;
    } catch {
      nicks.set(key, null);
      return undefined;
    }
  }

  async function toContext(raw: APIMessage[], guildId: string | undefined, limit: number): Promise<ContextMessage[]> {
    const byId = new Map<string, APIMessage>();
    for (const m of raw) if (CONTENT_TYPES.has(m.type) && m.type !== MessageType.ThreadStarterMessage) byId.set(m.id, m);
    const sorted = [...byId.values()].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1)).slice(-limit);
    const budget = { left: MAX_NICK_LOOKUPS };
    const me = deps.botId();
    const out: ContextMessage[] = [];
    for (const m of sorted) {
      const nick = guildId && !m.author.bot ? await nickOf(guildId, m.author.id, budget) : undefined;
      out.push({
        id: m.id,
        author: { id: m.author.id, name: nick ?? m.author.global_name ?? m.author.username, isBot: m.author.bot === true, ...(m.author.id === me && { isSelf: true }) },
        at: Date.parse(m.timestamp),
        text: readableText(m),
        ...(m.edited_timestamp && { edited: true }),
      });
    }
    return out;
  }

  async function withDeadline(what: string, channelId: string, work: () => Promise<ContextRead>): Promise<ContextRead> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<ContextRead>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, problem: { kind: 'rate_limited' } }), deadlineMs);
    });
    try {
      return await Promise.race([
        work().catch((err: unknown): ContextRead => {
          deps.log.warn({ err: String(err), channelId, what }, 'discord: reading the conversation failed');
          return { ok: false, problem: problemOf(err) };
        }),
        late,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    readEarlier({ conversation, messageId, referenceId, scope }, limit) {
      return withDeadline('earlier', conversation.channelId, async () => {
        const raw: APIMessage[] = [];
        let more = false;
        if (scope === 'thread' && conversation.threadId) {
          const read = await back(conversation.threadId, limit, messageId);
          raw.push(...read.messages);
          more = read.more;
          // A thread opened from a message starts with a pointer to it, in the parent channel.
          const starter = read.messages.find((m) => m.type === MessageType.ThreadStarterMessage && m.message_reference?.message_id);
          if (starter && !more) raw.push(...(await chain(starter.message_reference!.channel_id ?? conversation.channelId, starter.message_reference!.message_id!, 1).catch(() => [])));
        }
        if (referenceId) raw.push(...(await chain(conversation.channelId, referenceId, Math.min(MAX_CHAIN_HOPS, Math.max(1, limit)))));
        return { ok: true, messages: await toContext(raw, conversation.isDm ? undefined : conversation.workspaceId, limit), more };
      });
    },

    readChannel(conversation, opts) {
      return withDeadline('channel', conversation.channelId, async () => {
        const read = await back(conversation.channelId, opts.limit, opts.before);
        return { ok: true, messages: await toContext(read.messages, conversation.isDm ? undefined : conversation.workspaceId, opts.limit), more: read.more };
      });
    },
  };
}

function problemOf(err: unknown): ContextReadProblem {
  if (err instanceof RateLimitError) return { kind: 'rate_limited' };
  if (err instanceof DiscordAPIError && (err.status === 403 || err.code === 50001 || err.code === 50013)) {
    return { kind: 'missing_permission', permission: 'Read Message History', fix: PERMISSION_FIX };
  }
  return { kind: 'unavailable', detail: err instanceof Error ? err.message.slice(0, 200) : String(err) };
}

/** What a person reads: content with mentions named, plus files, embeds and stickers described. */
export function readableText(m: APIMessage): string {
  const names = new Map(m.mentions.map((u) => [u.id, u.global_name ?? u.username]));
  const parts: string[] = [];
  const text = m.content.replace(/<@!?(\d+)>/g, (whole, id: string) => (names.has(id) ? `@${names.get(id)} (<@${id}>)` : whole)).trim();
  if (text) parts.push(text);
  for (const a of m.attachments) parts.push(`[file: ${a.filename}${a.content_type ? ` (${a.content_type})` : ''}]`);
  for (const e of m.embeds) {
    const label = [e.title, e.description].filter(Boolean).join(' — ');
    if (label) parts.push(`[embed: ${label.slice(0, 300)}]`);
  }
  for (const s of m.sticker_items ?? []) parts.push(`[sticker: ${s.name}]`);
  return parts.join(' ') || '[an empty message]';
}
