/**
 * Files in and out of Slack.
 *
 * In: a `files[]` entry of a verified event names `url_private_download`. It is fetched with the
 * bot token, and the token goes only to that URL's host, which must be Slack's (or SLACK_API_URL's
 * host, for a self-hosted or fake Slack): a redirect to another host is refused, never followed
 * with the token. The declared size and Content-Length are checked before reading; the caller
 * counts the bytes again while saving. These downloads go only where the event points, so the
 * network tools' private-address rule (for URLs the model chooses) does not apply to them.
 *
 * Out: files.getUploadURLExternal → POST the bytes to the upload URL (no token: the URL is the
 * credential) → files.completeUploadExternal into the channel and thread.
 */
import type { webApi } from '@slack/bolt';
import type { InboundAttachment, OutboundFile, Conversation } from '../../src/basics/types.js';
import { WorkspaceError } from '../../src/capabilities/workspace/workspace.js';
import { honouringRateLimits, type Sleep } from './slack-calls.js';

const MAX_REDIRECTS = 3;
const UPLOAD_TIMEOUT_MS = 120_000;

/** The `files[]` fields we read (the event's file object). */
export interface SlackFile {
  id: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  mode?: string;
  url_private?: string;
  url_private_download?: string;
}

export function attachmentsOf(files: SlackFile[] | undefined): InboundAttachment[] {
  return (files ?? [])
    .filter((f) => f.mode !== 'tombstone' && f.mode !== 'external' && (f.url_private_download ?? f.url_private))
    .map((f) => ({
      id: f.id,
      name: f.name ?? f.title ?? f.id,
      size: f.size ?? 0,
      ...(f.mimetype && { mimeType: f.mimetype }),
      url: (f.url_private_download ?? f.url_private)!,
    }));
}

export interface SlackFilesDeps {
  client: webApi.WebClient;
  botToken: string;
  /** SLACK_API_URL when set: its host is then Slack's too. */
  apiUrl?: string;
  sleep?: Sleep;
}

export function createSlackFiles(deps: SlackFilesDeps) {
  const extraHost = deps.apiUrl ? new URL(deps.apiUrl).host : undefined;
  const isSlackHost = (u: URL) =>
    (u.protocol === 'https:' && (u.hostname === 'slack.com' || u.hostname.endsWith('.slack.com') || u.hostname.endsWith('.slack-edge.com'))) ||
    (extraHost !== undefined && u.host === extraHost);

  return {
    async fetchAttachment(att: InboundAttachment, opts: { maxBytes: number; signal: AbortSignal }): Promise<AsyncIterable<Uint8Array>> {
      if (att.size > opts.maxBytes) throw new WorkspaceError(`${att.name} is larger than allowed`, 'file_size');
      let url = new URL(att.url);
      if (!isSlackHost(url)) throw new Error(`refused to send the bot token to ${url.host}: not a Slack file host`);
      const host = url.host;
      for (let hop = 0; ; hop++) {
        const res = await fetch(url, { headers: { authorization: `Bearer ${deps.botToken}` }, redirect: 'manual', signal: opts.signal });
        if (res.status >= 300 && res.status < 400) {
          await res.body?.cancel();
          const next = new URL(res.headers.get('location') ?? '', url);
          if (next.host !== host || hop >= MAX_REDIRECTS) throw new Error(`Slack redirected the download of ${att.name} to ${next.host}; not followed with the bot token`);
          url = next;
          continue;
        }
        if (!res.ok || !res.body) {
          await res.body?.cancel();
          throw new Error(`Slack answered ${res.status} to the download of ${att.name}`);
        }
        // Without files:read Slack answers 200 with its sign-in page instead of the file.
        if ((res.headers.get('content-type') ?? '').startsWith('text/html') && !/\.html?$/i.test(att.name)) {
          await res.body.cancel();
          throw new Error(`Slack sent a web page instead of ${att.name}: the bot token probably lacks the files:read scope`);
        }
        const length = Number(res.headers.get('content-length') ?? NaN);
        if (Number.isFinite(length) && length > opts.maxBytes) {
          await res.body.cancel();
          throw new WorkspaceError(`${att.name} is larger than allowed`, 'file_size');
        }
        return res.body;
      }
    },

    async sendFile(conversation: Conversation, file: OutboundFile): Promise<void> {
      const call = <T>(fn: () => Promise<T>) => honouringRateLimits(fn, deps.sleep);
      const ticket = await call(() => deps.client.files.getUploadURLExternal({ filename: file.name, length: file.data.length }));
      if (!ticket.upload_url || !ticket.file_id) throw new Error('Slack gave no upload URL');
      const target = new URL(ticket.upload_url);
      if (!isSlackHost(target)) throw new Error(`Slack's upload URL points at ${target.host}, which is not a Slack host`);
      const res = await fetch(target, { method: 'POST', body: new Uint8Array(file.data), headers: { 'content-type': 'application/octet-stream' }, signal: AbortSignal.timeout(UPLOAD_TIMEOUT_MS) });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`the upload to Slack failed with status ${res.status}`);
      await call(() =>
        deps.client.files.completeUploadExternal({
          files: [{ id: ticket.file_id!, title: file.name }],
          channel_id: conversation.channelId,
          ...(conversation.threadId && { thread_ts: conversation.threadId }),
          ...(file.comment && { initial_comment: file.comment }),
        }),
      );
    },
  };
}
