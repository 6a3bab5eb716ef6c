import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ChannelType,
  MessageType,
  type APIApplicationCommand,
  type APIChannel,
  type APIMessage,
  type APIUser,
  type RESTGetAPIGatewayBotResult,
} from 'discord-api-types/v10';
import { snowflake } from './payloads.js';

/** REST half of the fake Discord: the routes discord.js and the adapter use, each call recorded. */

export interface RestCall {
  method: string;
  /** Path after /api/v10, e.g. /channels/123/messages. */
  path: string;
  query: Record<string, string>;
  body: unknown;
  at: number;
  /** What the fake answered (for POSTs that create messages: the message). */
  response?: unknown;
  /** Files of a multipart upload (a message with attachments). */
  files?: Array<{ name: string; data: Buffer }>;
}

export interface RestState {
  botUser: APIUser;
  applicationId: string;
  calls: RestCall[];
  messages: Map<string, APIMessage>;
  commands: { global: APIApplicationCommand[]; guild: Map<string, APIApplicationCommand[]> };
  /** Interaction token → the channel it came from and when, for webhook messages. */
  interactionChannels: Map<string, { channelId: string; createdAt: number }>;
  channel(id: string): APIChannel | undefined;
  openDm(userId: string): string;
  gatewayUrl(): string;
  /** Every message known per channel (users' via the senders, seeded ones, the bot's), by id. */
  channelLog: Map<string, Map<string, APIMessage>>;
  /** Guild member nicknames by user id (GET /guilds/:g/members/:u). */
  nicks: Map<string, string>;
  /** Channels whose history reads answer 403 Missing Access. */
  noHistory: Set<string>;
  /** When set, REST calls without `Authorization: Bot <token>` get 401 like Discord's. */
  token?: string;
  /** Files served under /cdn/attachments/:id/:name (what attachment URLs point at). */
  cdn: Map<string, { data: Buffer; contentType: string }>;
  /** Runs as each REST call arrives, before it is answered (a test looks at the bot's state at that moment). */
  onCall?: (call: RestCall) => void | Promise<void>;
}

type Json = Record<string, unknown>;

/** Discord's limit on a message's content. */
const DISCORD_CONTENT_MAX = 2000;

export async function handleRest(state: RestState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake');
  const method = req.method ?? 'GET';
  const bytes = await readBody(req);
  if (method === 'GET' && url.pathname.startsWith('/cdn/attachments/')) {
    const file = state.cdn.get(url.pathname.split('/')[3] ?? '');
    if (!file) return send(res, 404, { message: 'not found', code: 0 });
    res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.data.length) });
    res.end(file.data);
    return;
  }
  const { body, files } = await parseBody(bytes, String(req.headers['content-type'] ?? ''));
  if (!url.pathname.startsWith('/api/v10/')) return send(res, 404, { message: '404: Not Found', code: 0 });
  const path = decodeURIComponent(url.pathname.slice('/api/v10'.length));
  const call: RestCall = { method, path, query: Object.fromEntries(url.searchParams), body, at: Date.now(), ...(files.length && { files }) };
  const reply = (status: number, payload?: unknown): void => {
    call.response = payload;
    state.calls.push(call);
    send(res, status, payload);
  };
  if (state.token !== undefined && req.headers.authorization !== `Bot ${state.token}`) return reply(401, { message: '401: Unauthorized', code: 0 });
  await state.onCall?.(call);
  const seg = path.split('/').filter(Boolean);
  const app = state.applicationId;
  // Discord refuses message content over 2,000 characters (posts, edits and interaction replies).
  const content = body && typeof body === 'object' && !Array.isArray(body) ? (body as Json).content : undefined;
  if ((method === 'POST' || method === 'PATCH') && typeof content === 'string' && content.length > DISCORD_CONTENT_MAX) {
    return reply(400, { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${DISCORD_CONTENT_MAX} or fewer in length.` }] } } });
  }

  if (method === 'GET' && path === '/gateway/bot') {
    const info: RESTGetAPIGatewayBotResult = { url: state.gatewayUrl(), shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } };
    return reply(200, info);
  }
  if (method === 'GET' && path === '/users/@me') return reply(200, state.botUser);
  if (method === 'GET' && path === '/applications/@me') return reply(200, { id: app, name: 'hermes', bot: state.botUser, flags: 0 });
  if (method === 'POST' && path === '/users/@me/channels') {
    const recipient = (body as Json).recipient_id as string;
    return reply(200, { id: state.openDm(recipient), type: ChannelType.DM, recipients: [{ id: recipient, username: `user${recipient}`, discriminator: '0', global_name: null, avatar: null }], last_message_id: null });
  }

  // /applications/:app/commands[/:id] and /applications/:app/guilds/:guild/commands
  if (seg[0] === 'applications' && seg[1] === app) {
    const guildId = seg[2] === 'guilds' ? seg[3] : undefined;
    const list = guildId ? (state.commands.guild.get(guildId) ?? []) : state.commands.global;
    if (method === 'GET') return reply(200, list);
    if (method === 'PUT') {
      const next = (body as Json[]).map((c) => registered(c, app, guildId));
      if (guildId) state.commands.guild.set(guildId, next);
      else state.commands.global = next;
      return reply(200, next);
    }
    if (method === 'DELETE' && !guildId && seg[3]) {
      state.commands.global = state.commands.global.filter((c) => c.id !== seg[3]);
      return reply(204);
    }
  }

  if (method === 'GET' && seg[0] === 'guilds' && seg[2] === 'members' && seg[3]) {
    const nick = state.nicks.get(seg[3]);
    return reply(200, { user: { id: seg[3], username: `user${seg[3]}`, discriminator: '0', global_name: null, avatar: null }, nick: nick ?? null, roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 });
  }

  if (seg[0] === 'channels' && seg[1]) {
    const channelId = seg[1];
    if (method === 'GET' && seg[2] === 'messages' && state.noHistory.has(channelId)) return reply(403, { message: 'Missing Access', code: 50001 });
    if (method === 'GET' && seg[2] === 'messages' && seg.length === 3) {
      // Newest first, like Discord; `before` is exclusive, `limit` at most 100.
      const all = [...(state.channelLog.get(channelId)?.values() ?? [])].sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1));
      const before = call.query.before;
      const limit = Math.min(Number(call.query.limit ?? 50), 100);
      return reply(200, all.filter((m) => before === undefined || BigInt(m.id) < BigInt(before)).slice(0, limit));
    }
    if (method === 'GET' && seg[2] === 'messages' && seg[3]) {
      const found = state.channelLog.get(channelId)?.get(seg[3]);
      return found ? reply(200, found) : reply(404, { message: 'Unknown Message', code: 10008 });
    }
    if (method === 'GET' && seg.length === 2) {
      const c = state.channel(channelId);
      return c ? reply(200, c) : reply(404, { message: 'Unknown Channel', code: 10003 });
    }
    if (method === 'POST' && seg[2] === 'typing') return reply(204);
    // The bot's own reaction (path recorded decoded: /channels/:c/messages/:m/reactions/👀/@me).
    if (method === 'PUT' && seg[2] === 'messages' && seg[3] && seg[4] === 'reactions' && seg[5] && seg[6] === '@me') {
      return state.channelLog.get(channelId)?.has(seg[3]) ? reply(204) : reply(404, { message: 'Unknown Message', code: 10008 });
    }
    if (method === 'POST' && seg[2] === 'messages' && seg.length === 3) return reply(200, createMessage(state, channelId, body as Json));
    if (method === 'DELETE' && seg[2] === 'messages' && seg[3]) {
      const existing = state.messages.get(seg[3]);
      if (!existing || existing.channel_id !== channelId) return reply(404, { message: 'Unknown Message', code: 10008 });
      state.messages.delete(existing.id);
      state.channelLog.get(channelId)?.delete(existing.id);
      return reply(204);
    }
    if (method === 'PATCH' && seg[2] === 'messages' && seg[3]) {
      const existing = state.messages.get(seg[3]);
      if (!existing || existing.channel_id !== channelId) return reply(404, { message: 'Unknown Message', code: 10008 });
      const updated = { ...existing, ...(body as Json), edited_timestamp: new Date().toISOString() } as APIMessage;
      state.messages.set(existing.id, updated);
      return reply(200, updated);
    }
  }

  if (method === 'POST' && seg[0] === 'interactions' && seg[3] === 'callback') return reply(204);

  // /webhooks/:app/:token[/messages/@original]
  if (seg[0] === 'webhooks' && seg[1] === app && seg[2]) {
    const origin = state.interactionChannels.get(seg[2]);
    if (!origin) return reply(404, { message: 'Unknown Webhook', code: 10015 });
    if (method === 'PATCH' && seg[3] === 'messages' && seg[4] === '@original') {
      const key = `original:${seg[2]}`;
      const prior = state.messages.get(key);
      const message = prior ? ({ ...prior, ...(body as Json) } as APIMessage) : createMessage(state, origin.channelId, body as Json, false);
      state.messages.set(key, message);
      state.messages.set(message.id, message);
      return reply(200, message);
    }
    if (method === 'DELETE' && seg[3] === 'messages' && seg[4] === '@original') {
      const prior = state.messages.get(`original:${seg[2]}`);
      if (!prior) return reply(404, { message: 'Unknown Message', code: 10008 });
      state.messages.delete(`original:${seg[2]}`);
      state.messages.delete(prior.id);
      return reply(204);
    }
    if (method === 'POST' && seg.length === 3) return reply(200, createMessage(state, origin.channelId, body as Json, false));
  }

  return reply(404, { message: `fake discord has no route for ${method} ${path}`, code: 0 });
}

function createMessage(state: RestState, channelId: string, body: Json, keep = true): APIMessage {
  const reference = body.message_reference as { message_id: string } | undefined;
  const message = {
    id: snowflake(),
    channel_id: channelId,
    author: state.botUser,
    content: (body.content as string | undefined) ?? '',
    timestamp: new Date().toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: [],
    mention_roles: [],
    attachments: [],
    embeds: [],
    pinned: false,
    type: reference ? MessageType.Reply : MessageType.Default,
    flags: (body.flags as number | undefined) ?? 0,
    components: (body.components as APIMessage['components']) ?? [],
    ...(reference && { message_reference: { channel_id: channelId, message_id: reference.message_id } }),
  } as APIMessage;
  if (keep) state.messages.set(message.id, message);
  logMessage(state, message);
  return message;
}

function registered(c: Json, applicationId: string, guildId: string | undefined): APIApplicationCommand {
  return { ...c, id: snowflake(), application_id: applicationId, version: snowflake(), default_member_permissions: null, ...(guildId && { guild_id: guildId }) } as unknown as APIApplicationCommand;
}

/** JSON, or multipart/form-data as discord.js sends files: payload_json plus files[n]. */
async function parseBody(bytes: Buffer, contentType: string): Promise<{ body: unknown; files: Array<{ name: string; data: Buffer }> }> {
  if (!contentType.startsWith('multipart/form-data')) return { body: bytes.length ? JSON.parse(bytes.toString('utf8')) : null, files: [] };
  const form = await new Response(new Uint8Array(bytes), { headers: { 'content-type': contentType } }).formData();
  const files: Array<{ name: string; data: Buffer }> = [];
  let body: unknown = null;
  for (const [key, value] of form.entries()) {
    if (key === 'payload_json' && typeof value === 'string') body = JSON.parse(value);
    else if (typeof value !== 'string') files.push({ name: value.name, data: Buffer.from(await value.arrayBuffer()) });
  }
  return { body, files };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, payload?: unknown): void {
  if (status === 204 || payload === undefined) {
    res.writeHead(204);
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

/** Records a message in its channel's history (what GET /channels/:id/messages reads). */
export function logMessage(state: Pick<RestState, 'channelLog'>, message: APIMessage): void {
  let log = state.channelLog.get(message.channel_id);
  if (!log) state.channelLog.set(message.channel_id, (log = new Map()));
  log.set(message.id, message);
}
