/**
 * Reading a Slack conversation for context: a thread's earlier messages (conversations.replies,
 * paginated) and a channel's recent history (conversations.history). Names come from users.info
 * (cached), bots are labelled, edited messages carry their latest text, deleted ones are left out,
 * and messages made only of files or blocks are described rather than dropped.
 *
 * Bounds: at most MAX_REPLY_PAGES pages of a thread (a huge thread keeps its first message and the
 * newest of what was read); a 429 is waited out at most twice and never longer than
 * `maxRateLimitWaitMs` in all, then the read gives up and the turn goes on without it.
 */
import type { webApi } from '@slack/bolt';
import type { ContextMessage, ContextRead, ContextReadProblem, ConversationReader } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import { cleanInboundText } from './inbound-text.js';
import { describeSlackError, isRateLimited, type Sleep } from './slack-calls.js';
import type { UserNames } from './user-names.js';

const PAGE_SIZE = 200;
const MAX_REPLY_PAGES = 5;
const MAX_NAME_LOOKUPS = 50;
const RATE_LIMIT_RETRIES = 2;
const DEFAULT_MAX_RATE_LIMIT_WAIT_MS = 10_000;
/** Subtypes that are a person or bot saying something; joins, topic changes and the like are not context. */
const CONTENT_SUBTYPES = new Set([undefined, 'bot_message', 'file_share', 'thread_broadcast', 'me_message']);

/** The fields of a message in conversations.replies / conversations.history that we read. */
interface SlackMessage {
  ts?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  bot_profile?: { name?: string };
  subtype?: string;
  text?: string;
  edited?: unknown;
  hidden?: boolean;
  files?: Array<{ name?: string; title?: string; filetype?: string; mimetype?: string }>;
  blocks?: unknown[];
  attachments?: Array<{ title?: string; fallback?: string; text?: string }>;
  reply_count?: number;
}

export interface SlackReaderDeps {
  client: webApi.WebClient;
  names: UserNames;
  log: Logger;
  botUserId: string;
  botId: string;
  sleep?: Sleep;
  maxRateLimitWaitMs?: number;
}

const MANIFEST_FIX = 'add it under OAuth & Permissions → Scopes (or from adapters/slack/manifest.yaml) and reinstall the app';

export function createSlackReader(deps: SlackReaderDeps): ConversationReader {
  const sleep: Sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  const maxWait = deps.maxRateLimitWaitMs ?? DEFAULT_MAX_RATE_LIMIT_WAIT_MS;

  /** One Web API call; a 429 is waited out within the bound, anything else is thrown. */
  async function call<T>(fn: () => Promise<T>): Promise<T> {
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const waitMs = isRateLimited(err) ? Math.max(err.retryAfter, 1) * 1000 : Infinity;
        if (attempt >= RATE_LIMIT_RETRIES || waited + waitMs > maxWait) throw err;
        waited += waitMs;
        await sleep(waitMs);
      }
    }
  }

  async function toContext(channel: string, raw: SlackMessage[]): Promise<ContextMessage[]> {
    const kept = raw.filter((m) => m.ts && !m.hidden && m.subtype !== 'tombstone' && CONTENT_SUBTYPES.has(m.subtype));
    const ids = kept.flatMap((m) => [m.user ?? '', ...[...(m.text ?? '').matchAll(/<@([UW][A-Z0-9]+)/g)].map((x) => x[1]!)]).filter(Boolean);
    await deps.names.prefetch([deps.botUserId, ...ids], MAX_NAME_LOOKUPS);
    return kept.map((m) => {
      const isSelf = m.user === deps.botUserId || (m.bot_id !== undefined && m.bot_id === deps.botId);
      const isBot = m.bot_id !== undefined || m.subtype === 'bot_message';
      const name = (m.user && deps.names.nameOf(m.user)) || m.bot_profile?.name || m.username || m.user || m.bot_id || 'unknown';
      return {
        id: `${channel}:${m.ts}`,
        author: { id: m.user ?? m.bot_id ?? 'unknown', name, isBot, ...(isSelf && { isSelf }) },
        at: Math.round(Number(m.ts) * 1000),
        text: readableText(m, deps.names.nameOf),
        ...(m.edited !== undefined && { edited: true }),
      };
    });
  }

  function failed(err: unknown, channel: string): ContextRead {
    const problem = problemOf(err, channel);
    deps.log.warn({ err: describeSlackError(err), channel }, 'slack: reading the conversation failed');
    return { ok: false, problem };
  }

  return {
    async readEarlier({ conversation, messageId, scope }, limit) {
      const channel = conversation.channelId;
      const ts = messageId.includes(':') ? messageId.slice(messageId.lastIndexOf(':') + 1) : messageId;
      // A Slack reply names no other message than its thread; 'reference' has nothing more to read.
      if (!conversation.threadId || scope !== 'thread' || limit <= 0) return { ok: true, messages: [], more: false };
      try {
        const all: SlackMessage[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const res = await call(() => deps.client.conversations.replies({ channel, ts: conversation.threadId!, limit: PAGE_SIZE, ...(cursor && { cursor }) }));
          all.push(...((res.messages ?? []) as SlackMessage[]));
          cursor = res.response_metadata?.next_cursor || undefined;
          pages++;
        } while (cursor && pages < MAX_REPLY_PAGES);
        const before = all.filter((m) => m.ts !== undefined && Number(m.ts) < Number(ts));
        const messages = await toContext(channel, before);
        const more = cursor !== undefined || messages.length > limit;
        // The thread's first message says what it is about: kept even when the middle is left out.
        const newest = messages.slice(-limit);
        const parent = messages[0];
        const kept = parent && !newest.includes(parent) && limit > 1 ? [parent, ...messages.slice(-(limit - 1))] : newest;
        return { ok: true, messages: kept, more };
      } catch (err) {
        return failed(err, channel);
      }
    },

    async readSince({ conversation, messageId, after }, limit) {
      const channel = conversation.channelId;
      if (!conversation.threadId || limit <= 0) return { ok: true, messages: [], more: false };
      const before = Number(tsOf(messageId));
      const since = tsOf(after);
      try {
        // Only the part after the last message seen: `oldest` keeps the read to one small page in
        // the usual case. The thread's first message may come back anyway; the ts filter drops it.
        const res = await call(() => deps.client.conversations.replies({ channel, ts: conversation.threadId!, oldest: since, inclusive: false, limit: PAGE_SIZE }));
        const raw = ((res.messages ?? []) as SlackMessage[]).filter((m) => m.ts !== undefined && Number(m.ts) > Number(since) && Number(m.ts) < before);
        const messages = await toContext(channel, raw);
        return { ok: true, messages: messages.slice(-limit), more: messages.length > limit || Boolean(res.response_metadata?.next_cursor) };
      } catch (err) {
        return failed(err, channel);
      }
    },

    async readChannel(conversation, opts) {
      const channel = conversation.channelId;
      const latest = opts.before ? opts.before.slice(opts.before.lastIndexOf(':') + 1) : undefined;
      try {
        const res = await call(() => deps.client.conversations.history({ channel, limit: Math.min(Math.max(1, opts.limit), PAGE_SIZE), ...(latest && { latest, inclusive: false }) }));
        const newestFirst = (res.messages ?? []) as SlackMessage[];
        return { ok: true, messages: await toContext(channel, [...newestFirst].reverse()), more: res.has_more === true };
      } catch (err) {
        return failed(err, channel);
      }
    },
  };
}

/** The Slack ts in an id of ours (`C123:1712.0001`) or a bare ts. */
function tsOf(id: string): string {
  return id.includes(':') ? id.slice(id.lastIndexOf(':') + 1) : id;
}

function problemOf(err: unknown, channel: string): ContextReadProblem {
  if (isRateLimited(err)) return { kind: 'rate_limited' };
  const data = (err as { data?: { error?: string; needed?: string } }).data;
  if (data?.error === 'missing_scope') return { kind: 'missing_permission', permission: data.needed?.split(',')[0] || scopeFor(channel), fix: MANIFEST_FIX };
  if (data?.error === 'not_in_channel') return { kind: 'unavailable', detail: 'the app is not a member of this channel' };
  return { kind: 'unavailable', detail: data?.error ?? describeSlackError(err) };
}

/** The history scope a channel id needs (C public, G private or group DM, D direct message). */
function scopeFor(channel: string): string {
  if (channel.startsWith('D')) return 'im:history';
  if (channel.startsWith('G')) return 'groups:history';
  return 'channels:history';
}

/** The text a person would read, with files, blocks and attachments described. */
export function readableText(m: SlackMessage, nameOf: (id: string) => string | undefined): string {
  const parts: string[] = [];
  const text = cleanInboundText(m.text ?? '', '', nameOf);
  if (text) parts.push(text);
  else if (m.blocks?.length) {
    const fromBlocks = blockText(m.blocks).replace(/\s+/g, ' ').trim();
    parts.push(fromBlocks ? `[blocks] ${fromBlocks.slice(0, 2_000)}` : '[a message made of blocks with no text]');
  }
  for (const f of m.files ?? []) parts.push(`[file: ${f.name ?? f.title ?? 'unnamed'}${f.filetype ? ` (${f.filetype})` : ''}]`);
  for (const a of m.attachments ?? []) {
    const label = a.title ?? a.fallback ?? a.text;
    if (label) parts.push(`[attachment: ${label.slice(0, 300)}]`);
  }
  if (m.reply_count) parts.push(`[${m.reply_count} repl${m.reply_count === 1 ? 'y' : 'ies'} in its thread]`);
  return parts.join(' ') || '[an empty message]';
}

/** Every `text` string inside Block Kit blocks (sections, rich text, context), depth-bounded. */
function blockText(node: unknown, depth = 0): string {
  if (depth > 8 || node === null || typeof node !== 'object') return '';
  if (Array.isArray(node)) return node.map((n) => blockText(n, depth + 1)).filter(Boolean).join(' ');
  const out: string[] = [];
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === 'text' && typeof value === 'string') out.push(value);
    else if (key === 'url' && typeof value === 'string') out.push(value);
    else if (typeof value === 'object') out.push(blockText(value, depth + 1));
  }
  return out.filter(Boolean).join(' ');
}

