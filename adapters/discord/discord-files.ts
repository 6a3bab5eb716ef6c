/**
 * Files in and out of Discord.
 *
 * In: `attachments[]` of a received message name a CDN URL. It is fetched without the bot token
 * (CDN URLs carry their own signature), only from Discord's CDN hosts (or DISCORD_API_URL's host,
 * for a fake or proxy), never following a redirect elsewhere. The declared size and
 * Content-Length are checked before reading; the caller counts the bytes again while saving.
 *
 * Out: a message in the channel (or thread) replying to the user's message, with the file attached
 * (multipart upload through discord.js's REST client) and the comment as its text.
 */
import type { Message, REST } from 'discord.js';
import { Routes } from 'discord-api-types/v10';
import type { Conversation, InboundAttachment, OutboundFile } from '../../src/basics/types.js';
import { WorkspaceError } from '../../src/capabilities/workspace/workspace.js';
import { textMessage } from './render.js';

const CDN_HOSTS = new Set(['cdn.discordapp.com', 'media.discordapp.net']);

export function attachmentsOf(message: Pick<Message, 'attachments'>): InboundAttachment[] {
  return [...message.attachments.values()].map((a) => ({
    id: a.id,
    name: a.name,
    size: a.size,
    ...(a.contentType && { mimeType: a.contentType }),
    url: a.url,
  }));
}

export function createDiscordFiles(rest: REST, apiUrl?: string) {
  const extraHost = apiUrl ? new URL(apiUrl).host : undefined;
  const allowed = (u: URL) => (u.protocol === 'https:' && CDN_HOSTS.has(u.hostname)) || (extraHost !== undefined && u.host === extraHost);

  return {
    async fetchAttachment(att: InboundAttachment, opts: { maxBytes: number; signal: AbortSignal }): Promise<AsyncIterable<Uint8Array>> {
      if (att.size > opts.maxBytes) throw new WorkspaceError(`${att.name} is larger than allowed`, 'file_size');
      const url = new URL(att.url);
      if (!allowed(url)) throw new Error(`refused to download ${att.name} from ${url.host}: not Discord's CDN`);
      const res = await fetch(url, { redirect: 'error', signal: opts.signal });
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        throw new Error(`Discord's CDN answered ${res.status} to the download of ${att.name}`);
      }
      const length = Number(res.headers.get('content-length') ?? NaN);
      if (Number.isFinite(length) && length > opts.maxBytes) {
        await res.body.cancel();
        throw new WorkspaceError(`${att.name} is larger than allowed`, 'file_size');
      }
      return res.body;
    },

    async sendFile(conversation: Conversation, file: OutboundFile, opts?: { replyTo?: string }): Promise<void> {
      await rest.post(Routes.channelMessages(conversation.channelId), {
        body: textMessage(file.comment ?? '', opts?.replyTo),
        files: [{ name: file.name, data: file.data }],
      });
    },
  };
}
