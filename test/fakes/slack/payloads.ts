import { createHmac } from 'node:crypto';

/**
 * What Slack sends to an app: Events API envelopes, slash-command forms, block_actions payloads,
 * and the v0 request signature. Pure builders, shared by the fake's HTTP and Socket Mode senders.
 */

export interface Workspace {
  teamId: string;
  botUserId: string;
  botId: string;
}

export function eventEnvelope(ws: Workspace, event: Record<string, unknown>, eventId: string): Record<string, unknown> {
  return {
    token: 'legacy',
    team_id: ws.teamId,
    api_app_id: 'A0APP',
    type: 'event_callback',
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: ws.teamId, user_id: ws.botUserId, is_bot: true, is_enterprise_install: false }],
    event: { event_ts: event.ts, team: ws.teamId, ...event },
  };
}

export function commandForm(ws: Workspace, cmd: { text: string; userId: string; channelId: string; userName?: string }, responseUrl: string, triggerId: string): string {
  return new URLSearchParams({
    token: 'legacy',
    team_id: ws.teamId,
    team_domain: 'fake',
    channel_id: cmd.channelId,
    channel_name: 'general',
    user_id: cmd.userId,
    user_name: cmd.userName ?? cmd.userId.toLowerCase(),
    command: '/hermes',
    text: cmd.text,
    api_app_id: 'A0APP',
    response_url: responseUrl,
    trigger_id: triggerId,
  }).toString();
}

export interface Click {
  actionId: string;
  value: string;
  userId: string;
  channelId: string;
  messageTs: string;
  threadTs?: string;
  /** The element clicked (default a button); `feedback_buttons` for Slack's thumbs. */
  actionType?: 'button' | 'feedback_buttons';
}

export function clickForm(ws: Workspace, click: Click, responseUrl: string, triggerId: string): string {
  const payload = {
    type: 'block_actions',
    team: { id: ws.teamId, domain: 'fake' },
    user: { id: click.userId, username: click.userId.toLowerCase(), name: click.userId.toLowerCase(), team_id: ws.teamId },
    api_app_id: 'A0APP',
    token: 'legacy',
    container: { type: 'message', message_ts: click.messageTs, channel_id: click.channelId, is_ephemeral: false, thread_ts: click.threadTs },
    trigger_id: triggerId,
    channel: { id: click.channelId, name: 'general' },
    message: { type: 'message', ts: click.messageTs, thread_ts: click.threadTs, text: 'Approval needed', user: ws.botUserId, bot_id: ws.botId },
    response_url: responseUrl,
    actions: [{ type: click.actionType ?? 'button', action_id: click.actionId, block_id: 'hermes_approval', value: click.value, text: { type: 'plain_text', text: 'x' }, action_ts: `${Date.now() / 1000}` }],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/** POSTs `body` signed the way Slack signs requests (v0, HMAC-SHA256 over `v0:ts:body`). */
export function signedPost(target: string, body: string, contentType: string, secret: string, extraHeaders: Record<string, string> = {}, skewS = 0): Promise<Response> {
  const ts = (Math.floor(Date.now() / 1000) + skewS).toString();
  const sig = 'v0=' + createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex');
  return fetch(target, {
    method: 'POST',
    // Bolt compares the form content type exactly, so no charset suffix here.
    headers: { 'content-type': contentType, 'x-slack-request-timestamp': ts, 'x-slack-signature': sig, ...extraHeaders },
    body,
    signal: AbortSignal.timeout(10_000),
  });
}
