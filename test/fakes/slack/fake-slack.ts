import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { clickForm, commandForm, eventEnvelope, signedPost, type Click, type Workspace } from './payloads.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../helpers/fake-secrets.js';

/**
 * A fake Slack on 127.0.0.1: the Web API (recording every call), a response_url receiver, and
 * senders of signed Events API deliveries, block_actions clicks and slash commands to a bot's
 * `/slack/events`. The real Bolt App and WebClient talk to it over HTTP, so signatures, form
 * encodings, 429 handling and timeouts are exercised for real.
 */

export interface ApiCall {
  method: string;
  args: Record<string, unknown>;
  /** The bearer token the call carried. */
  token: string | undefined;
  at: number;
  /** Status we answered with (200 or 429). */
  status: number;
  /** ts we assigned, for chat.postMessage. */
  ts?: string;
  /** The error a message call was refused with for breaking Slack's size limits (msg_too_long, invalid_blocks). */
  refused?: string;
}

export interface ResponseUrlPost {
  id: string;
  body: Record<string, unknown>;
}

export interface FakeSlackOptions {
  botUserId?: string;
  botId?: string;
  teamId?: string;
  botToken?: string;
  /** App-level token accepted by apps.connections.open (Socket Mode). */
  appToken?: string;
  signingSecret?: string;
  /** Sent in auth.test's x-oauth-scopes header; undefined → header omitted. */
  scopes?: string[] | undefined;
}

export const FULL_SCOPES = [
  'app_mentions:read', 'chat:write', 'im:history', 'im:read', 'channels:history', 'groups:history', 'mpim:history',
  'reactions:write', 'users:read', 'commands', 'files:read', 'files:write', 'assistant:write',
];

/** A file as a Slack event's files[] carries it (the fields the bot reads). */
export interface FakeSlackFile {
  id: string;
  name: string;
  title: string;
  mimetype: string;
  size: number;
  mode: 'hosted';
  url_private: string;
  url_private_download: string;
}

/** A file the bot uploaded (getUploadURLExternal → POST bytes → completeUploadExternal). */
export interface FakeUpload {
  id: string;
  name: string;
  data: Buffer;
  channel?: string;
  thread_ts?: string;
  comment?: string;
}

/** A message streamed with chat.startStream → appendStream → stopStream. */
export interface FakeStream {
  channel: string;
  ts: string;
  thread_ts?: string;
  recipient_user_id?: string;
  recipient_team_id?: string;
  /** All markdown_text so far, in order. */
  text: string;
  /** Every chunk object sent (task updates, blocks), in order. */
  chunks: Array<Record<string, unknown>>;
  /** blocks given to chat.stopStream. */
  blocks?: unknown[];
  state: 'streaming' | 'stopped';
  /** Calls made to this stream, start and stop included. */
  calls: number;
}

export interface FakeSlack {
  url: string;
  /** Pass as SLACK_API_URL. */
  apiUrl: string;
  botUserId: string;
  botId: string;
  teamId: string;
  botToken: string;
  appToken: string;
  signingSecret: string;
  calls: ApiCall[];
  responses: ResponseUrlPost[];
  callsTo(method: string): ApiCall[];
  /** Bot posts (successful chat.postMessage calls) in order. */
  posts(filter?: { channel?: string; thread_ts?: string }): Array<{ channel: string; ts: string; text: string; thread_ts?: string; args: Record<string, unknown> }>;
  /**
   * Approval prompts among the bot posts (an Approve button in the blocks): other posts carry blocks
   * too (the Stop button on the in-progress message, feedback buttons on the answer).
   */
  approvalPrompts(filter?: { channel?: string; thread_ts?: string }): Array<{ channel: string; ts: string; text: string; thread_ts?: string; args: Record<string, unknown> }>;
  setScopes(scopes: string[] | undefined): void;
  /**
   * Puts a message into a channel as if it had been posted earlier (thread replies with thread_ts).
   * conversations.replies / conversations.history read these, the bot's own posts and every message
   * event sent through sendEvent, paginated like Slack (replies oldest first, history newest first).
   */
  seedMessage(channel: string, message: Record<string, unknown> & { ts?: string }): string;
  /** Page size the fake uses for conversations.replies, whatever `limit` asks (tests of pagination). */
  setRepliesPageSize(n: number): void;
  setUser(id: string, name: string): void;
  /** The next `times` calls of `method` answer 429 with Retry-After. */
  rateLimitNext(method: string, retryAfterS: number, times?: number): void;
  /** The next call of `method` answers ok:false with `error`. */
  failNext(method: string, error: string): void;
  /** The next call of `method` is performed (recorded) but answered only after `ms`. */
  delayNext(method: string, ms: number): void;
  /**
   * Makes chat.startStream answer ok:false with `error` (e.g. `not_allowed`, `feature_not_enabled`)
   * until called again with undefined: a workspace that refuses streaming.
   */
  refuseStreaming(error: string | undefined): void;
  /** Streamed messages in the order they were started. */
  streams(): FakeStream[];
  /** A fresh message ts, for events the "user" sends. */
  nextTs(): string;
  waitFor(what: string, predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /** `skewS` dates the request that many seconds away from now (still validly signed). */
  sendEvent(target: string, event: Record<string, unknown>, opts?: { eventId?: string; retryNum?: number; secret?: string; skewS?: number; headers?: Record<string, string> }): Promise<Response>;
  sendCommand(target: string, cmd: { text: string; userId: string; channelId: string; userName?: string }): Promise<{ status: number; responseId: string }>;
  sendClick(target: string, click: Click): Promise<Response>;
  /**
   * Hosts a file the bot may download with its token (GET url_private_download). `redirectTo`
   * answers 302 there instead; `omitLength` sends no Content-Length (chunked).
   */
  addFile(opts: { name: string; data: Buffer; mimetype?: string; redirectTo?: string; omitLength?: boolean }): FakeSlackFile;
  /** File downloads the bot made (with the token they carried). */
  downloads: Array<{ fileId: string; token: string | undefined }>;
  /** Files uploaded and completed into a conversation, in order. */
  uploads(): FakeUpload[];
  /** Open Socket Mode connections (after apps.connections.open + hello). */
  socketCount(): number;
  /** Pushes an Events API envelope over Socket Mode; resolves when the app acknowledges it. */
  sendSocketEvent(event: Record<string, unknown>, opts?: { eventId?: string }): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeSlack(opts: FakeSlackOptions = {}): Promise<FakeSlack> {
  const botUserId = opts.botUserId ?? 'UBOT';
  const botId = opts.botId ?? 'BBOT';
  const teamId = opts.teamId ?? 'T0TEAM';
  const botToken = opts.botToken ?? FAKE_SLACK_BOT_TOKEN;
  const appToken = opts.appToken ?? FAKE_SLACK_APP_TOKEN;
  const signingSecret = opts.signingSecret ?? 'fake-signing-secret';
  let scopes: string[] | undefined = 'scopes' in opts ? opts.scopes : FULL_SCOPES;
  const users = new Map<string, string>();
  const history = new Map<string, Array<Record<string, unknown> & { ts: string }>>();
  let repliesPageSize = Infinity;
  const remember = (channel: string, m: Record<string, unknown> & { ts: string }) => {
    const list = history.get(channel) ?? [];
    if (list.some((x) => x.ts === m.ts)) return;
    list.push(m);
    list.sort((a, b) => Number(a.ts) - Number(b.ts));
    history.set(channel, list);
  };
  const historyScope = (channel: string) => (channel.startsWith('D') ? 'im:history' : channel.startsWith('G') ? 'groups:history' : 'channels:history');
  const lacks = (scope: string) => scopes !== undefined && !scopes.includes(scope);
  const rateLimits = new Map<string, { retryAfterS: number; times: number }>();
  const failures = new Map<string, string>();
  const delays = new Map<string, number>();
  const calls: ApiCall[] = [];
  const responses: ResponseUrlPost[] = [];
  const sockets = new Set<Socket>();
  const hosted = new Map<string, { name: string; data: Buffer; redirectTo?: string; omitLength?: boolean }>();
  const uploaded = new Map<string, FakeUpload>();
  const completed: FakeUpload[] = [];
  const downloads: Array<{ fileId: string; token: string | undefined }> = [];
  const streamed = new Map<string, FakeStream>();
  let streamRefusal: string | undefined;
  let fileCounter = 0;
  let tsCounter = 0;
  let eventCounter = 0;
  let responseCounter = 0;
  const nextTs = () => `${1_700_000_000 + ++tsCounter}.${String(tsCounter).padStart(6, '0')}`;

  const server = http.createServer((req, res) => {
    void route(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { ok: false, error: `fake_error: ${String(err)}` });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const wss = new WebSocketServer({ server, path: '/socket' });
  const sockets4Mode = new Set<WebSocket>();
  const acks = new Map<string, () => void>();
  wss.on('connection', (socket) => {
    sockets4Mode.add(socket);
    socket.on('close', () => sockets4Mode.delete(socket));
    socket.on('message', (data) => {
      const msg = JSON.parse(String(data)) as { envelope_id?: string };
      if (msg.envelope_id) acks.get(msg.envelope_id)?.();
    });
    socket.send(JSON.stringify({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A0APP' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const bytes = await readBody(req);
    const raw = bytes.toString('utf8');
    if (path.startsWith('/files/')) return serveFile(path, req, res);
    if (path.startsWith('/upload/')) {
      const entry = uploaded.get(path.slice('/upload/'.length));
      if (!entry) return json(res, 404, { ok: false, error: 'unknown_upload' });
      entry.data = bytes;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('OK - ' + bytes.length);
      return;
    }
    if (path.startsWith('/response/')) {
      responses.push({ id: path.slice('/response/'.length), body: JSON.parse(raw || '{}') as Record<string, unknown> });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (!path.startsWith('/api/')) return json(res, 404, { ok: false, error: 'unknown_path' });
    const method = path.slice('/api/'.length);
    const args = parseArgs(raw, req.headers['content-type'] ?? '');
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : typeof args.token === 'string' ? args.token : undefined;
    const call: ApiCall = { method, args, token, at: Date.now(), status: 200 };
    calls.push(call);

    const limit = rateLimits.get(method);
    if (limit && limit.times > 0) {
      limit.times -= 1;
      call.status = 429;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(limit.retryAfterS) });
      res.end(JSON.stringify({ ok: false, error: 'ratelimited' }));
      return;
    }
    if (method === 'apps.connections.open') {
      if (token !== appToken) return json(res, 200, { ok: false, error: 'invalid_auth' });
      return json(res, 200, { ok: true, url: `${url.replace('http:', 'ws:')}/socket` });
    }
    if (token !== botToken) return json(res, 200, { ok: false, error: 'invalid_auth' });
    const delay = delays.get(method);
    if (delay !== undefined) {
      delays.delete(method);
      await new Promise((r) => setTimeout(r, delay));
    }
    const failure = failures.get(method);
    if (failure) {
      failures.delete(method);
      return json(res, 200, { ok: false, error: failure });
    }
    return answer(call, res);
  }

  function serveFile(path: string, req: http.IncomingMessage, res: http.ServerResponse): void {
    const id = path.split('/')[2] ?? '';
    const file = hosted.get(id);
    const auth = req.headers.authorization;
    downloads.push({ fileId: id, token: auth?.startsWith('Bearer ') ? auth.slice(7) : undefined });
    if (!file) return void res.writeHead(404).end('no such file');
    if (auth !== `Bearer ${botToken}`) return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>sign in to Slack</html>');
    if (file.redirectTo) return void res.writeHead(302, { location: file.redirectTo }).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', ...(!file.omitLength && { 'content-length': String(file.data.length) }) });
    res.end(file.data);
  }

  function answer(call: ApiCall, res: http.ServerResponse): void {
    const { method, args } = call;
    const oversize = method === 'chat.postMessage' || method === 'chat.update' || method === 'chat.postEphemeral' ? sizeError(args) : undefined;
    if (oversize) {
      call.refused = oversize;
      return json(res, 200, { ok: false, error: oversize });
    }
    switch (method) {
      case 'files.getUploadURLExternal': {
        const id = `F${String(++fileCounter).padStart(8, '0')}`;
        uploaded.set(id, { id, name: String(args.filename), data: Buffer.alloc(0) });
        return json(res, 200, { ok: true, upload_url: `${url}/upload/${id}`, file_id: id });
      }
      case 'files.completeUploadExternal': {
        const list = (typeof args.files === 'string' ? JSON.parse(args.files) : args.files) as Array<{ id: string; title?: string }>;
        for (const f of list) {
          const entry = uploaded.get(f.id);
          if (!entry) return json(res, 200, { ok: false, error: 'file_not_found' });
          completed.push({ ...entry, channel: args.channel_id as string | undefined, thread_ts: args.thread_ts as string | undefined, comment: args.initial_comment as string | undefined });
        }
        return json(res, 200, { ok: true, files: list.map((f) => ({ id: f.id, title: f.title })) });
      }
      case 'auth.test': {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (scopes !== undefined) headers['x-oauth-scopes'] = scopes.join(',');
        res.writeHead(200, headers);
        res.end(JSON.stringify({ ok: true, url: 'https://fake.slack.com/', team: 'Fake', user: 'hermes', team_id: teamId, user_id: botUserId, bot_id: botId }));
        return;
      }
      case 'chat.postMessage': {
        const ts = nextTs();
        call.ts = ts;
        remember(String(args.channel), { ts, user: botUserId, bot_id: botId, text: args.text, ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}) });
        return json(res, 200, { ok: true, channel: args.channel, ts, message: { text: args.text, ts, user: botUserId, bot_id: botId } });
      }
      case 'chat.update': {
        const kept = history.get(String(args.channel))?.find((m) => m.ts === args.ts);
        if (kept && typeof args.text === 'string') kept.text = args.text;
        return json(res, 200, { ok: true, channel: args.channel, ts: args.ts, text: args.text });
      }
      case 'chat.startStream':
      case 'chat.appendStream':
      case 'chat.stopStream':
        return answerStream(call, res);
      case 'assistant.threads.setSuggestedPrompts': {
        const prompts = args.prompts as unknown;
        if (!args.channel_id || !Array.isArray(prompts) || prompts.length === 0 || prompts.length > 4) return json(res, 200, { ok: false, error: 'invalid_arguments' });
        if (prompts.some((p) => typeof p !== 'object' || p === null || typeof (p as { title?: unknown }).title !== 'string' || typeof (p as { message?: unknown }).message !== 'string')) {
          return json(res, 200, { ok: false, error: 'invalid_arguments' });
        }
        return json(res, 200, { ok: true });
      }
      case 'assistant.threads.setStatus':
      case 'assistant.threads.setTitle':
        if (!args.channel_id || !args.thread_ts) return json(res, 200, { ok: false, error: 'invalid_arguments' });
        return json(res, 200, { ok: true });
      case 'chat.postEphemeral':
        return json(res, 200, { ok: true, message_ts: nextTs() });
      case 'users.info': {
        const id = String(args.user);
        const name = users.get(id);
        if (!name) return json(res, 200, { ok: false, error: 'user_not_found' });
        return json(res, 200, { ok: true, user: { id, name: name.toLowerCase(), real_name: name, profile: { display_name: name, real_name: name } } });
      }
      case 'conversations.replies': {
        const channel = String(args.channel);
        if (lacks(historyScope(channel))) return json(res, 200, { ok: false, error: 'missing_scope', needed: historyScope(channel) });
        const whole = (history.get(channel) ?? []).filter((m) => m.ts === args.ts || m.thread_ts === args.ts);
        if (whole.length === 0) return json(res, 200, { ok: false, error: 'thread_not_found' });
        // `oldest` as Slack reads it (exclusive unless `inclusive`); the parent still comes first.
        const oldest = args.oldest === undefined ? undefined : Number(args.oldest);
        const inclusive = args.inclusive === true || args.inclusive === 'true' || args.inclusive === '1';
        const thread = oldest === undefined ? whole : whole.filter((m) => m.ts === args.ts || Number(m.ts) > oldest || (inclusive && Number(m.ts) === oldest));
        const start = Number(args.cursor ?? 0);
        const size = Math.min(Number(args.limit ?? 1000), repliesPageSize);
        const page = thread.slice(start, start + size);
        const next = start + size < thread.length ? String(start + size) : '';
        return json(res, 200, { ok: true, messages: page, has_more: next !== '', response_metadata: { next_cursor: next } });
      }
      case 'conversations.history': {
        const channel = String(args.channel);
        if (lacks(historyScope(channel))) return json(res, 200, { ok: false, error: 'missing_scope', needed: historyScope(channel) });
        const latest = args.latest === undefined ? Infinity : Number(args.latest);
        const top = (history.get(channel) ?? []).filter((m) => (m.thread_ts === undefined || m.thread_ts === m.ts) && Number(m.ts) < latest).reverse();
        const limit = Math.min(Number(args.limit ?? 100), 999);
        return json(res, 200, { ok: true, messages: top.slice(0, limit), has_more: top.length > limit });
      }
      default:
        // reactions.add/remove, assistant.threads.setStatus and anything else: accepted.
        return json(res, 200, { ok: true });
    }
  }

  /** Slack's streaming trio, with the checks a real workspace makes (state, recipient, size). */
  function answerStream(call: ApiCall, res: http.ServerResponse): void {
    const { method, args } = call;
    const markdown = typeof args.markdown_text === 'string' ? args.markdown_text : '';
    if (markdown.length > 12_000) return json(res, 200, { ok: false, error: 'msg_too_long' });
    const chunks = Array.isArray(args.chunks) ? (args.chunks as Array<Record<string, unknown>>) : [];
    if (method === 'chat.startStream') {
      if (streamRefusal) return json(res, 200, { ok: false, error: streamRefusal });
      const channel = String(args.channel ?? '');
      if (!channel) return json(res, 200, { ok: false, error: 'channel_not_found' });
      if (!channel.startsWith('D') && (!args.recipient_user_id || !args.recipient_team_id)) return json(res, 200, { ok: false, error: 'invalid_arguments' });
      const ts = nextTs();
      call.ts = ts;
      const thread = typeof args.thread_ts === 'string' ? args.thread_ts : undefined;
      streamed.set(ts, { channel, ts, thread_ts: thread, recipient_user_id: args.recipient_user_id as string | undefined, recipient_team_id: args.recipient_team_id as string | undefined, text: markdown + chunkText(chunks), chunks: [...chunks], state: 'streaming', calls: 1 });
      remember(channel, { ts, user: botUserId, bot_id: botId, text: markdown, ...(thread ? { thread_ts: thread } : {}) });
      return json(res, 200, { ok: true, channel, ts });
    }
    const stream = streamed.get(String(args.ts));
    if (!stream || stream.channel !== args.channel) return json(res, 200, { ok: false, error: 'message_not_found' });
    if (stream.state !== 'streaming') return json(res, 200, { ok: false, error: 'message_not_in_streaming_state' });
    stream.calls += 1;
    stream.text += markdown + chunkText(chunks);
    stream.chunks.push(...chunks);
    if (method === 'chat.stopStream') {
      stream.state = 'stopped';
      if (Array.isArray(args.blocks)) stream.blocks = args.blocks;
    }
    const kept = history.get(stream.channel)?.find((m) => m.ts === stream.ts);
    if (kept) kept.text = stream.text;
    return json(res, 200, { ok: true, channel: stream.channel, ts: stream.ts });
  }

  const ws: Workspace = { teamId, botUserId, botId };

  const fake: FakeSlack = {
    url,
    apiUrl: `${url}/api/`,
    botUserId,
    botId,
    teamId,
    botToken,
    appToken,
    signingSecret,
    calls,
    responses,
    callsTo: (method) => calls.filter((c) => c.method === method),
    posts(filter = {}) {
      return calls
        .filter((c) => c.method === 'chat.postMessage' && c.status === 200 && c.token === botToken && !c.refused)
        .filter((c) => (filter.channel === undefined || c.args.channel === filter.channel) && (filter.thread_ts === undefined || c.args.thread_ts === filter.thread_ts))
        .map((c) => ({ channel: String(c.args.channel), ts: c.ts ?? '', text: String(c.args.text ?? ''), thread_ts: c.args.thread_ts as string | undefined, args: c.args }));
    },
    approvalPrompts(filter = {}) {
      return fake.posts(filter).filter((p) => Array.isArray(p.args.blocks) && JSON.stringify(p.args.blocks).includes('"action_id":"hermes_approve"'));
    },
    setScopes: (s) => {
      scopes = s;
    },
    seedMessage(channel, message) {
      const ts = message.ts ?? nextTs();
      remember(channel, { ...message, ts });
      return ts;
    },
    setRepliesPageSize(n) {
      repliesPageSize = n;
    },
    setUser: (id, name) => {
      users.set(id, name);
    },
    rateLimitNext: (method, retryAfterS, times = 1) => {
      rateLimits.set(method, { retryAfterS, times });
    },
    failNext: (method, error) => {
      failures.set(method, error);
    },
    delayNext: (method, ms) => {
      delays.set(method, ms);
    },
    refuseStreaming(error) {
      streamRefusal = error;
    },
    streams: () => [...streamed.values()],
    nextTs,
    async waitFor(what, predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    sendEvent(target, event, o = {}) {
      if (typeof event.channel === 'string' && typeof event.ts === 'string' && (event.type === 'message' || event.type === 'app_mention') && event.subtype === undefined) {
        remember(event.channel, event as Record<string, unknown> & { ts: string });
      }
      // Edits and deletions change what conversations.replies / history return afterwards, as on Slack.
      const list = typeof event.channel === 'string' ? history.get(event.channel) : undefined;
      const changed = event.message as { ts?: string; text?: string } | undefined;
      if (list && event.subtype === 'message_changed' && changed?.ts) {
        const i = list.findIndex((m) => m.ts === changed.ts);
        if (i >= 0) list[i] = { ...list[i]!, text: changed.text, edited: { user: list[i]!.user, ts: String(event.ts) } };
      }
      if (list && event.subtype === 'message_deleted' && typeof event.deleted_ts === 'string') {
        const i = list.findIndex((m) => m.ts === event.deleted_ts);
        if (i >= 0) list.splice(i, 1);
      }
      const eventId = o.eventId ?? `Ev${String(++eventCounter).padStart(8, '0')}`;
      const body = JSON.stringify(eventEnvelope(ws, event, eventId));
      const extra: Record<string, string> = { ...o.headers, ...(o.retryNum ? { 'x-slack-retry-num': String(o.retryNum), 'x-slack-retry-reason': 'http_timeout' } : {}) };
      return signedPost(target, body, 'application/json', o.secret ?? signingSecret, extra, o.skewS);
    },
    async sendCommand(target, cmd) {
      const responseId = `r${++responseCounter}`;
      const body = commandForm(ws, cmd, `${url}/response/${responseId}`, `trig${responseCounter}`);
      const res = await signedPost(target, body, 'application/x-www-form-urlencoded', signingSecret);
      return { status: res.status, responseId };
    },
    sendClick(target, click) {
      const n = ++responseCounter;
      return signedPost(target, clickForm(ws, click, `${url}/response/a${n}`, `trig${n}`), 'application/x-www-form-urlencoded', signingSecret);
    },
    addFile({ name, data, mimetype, redirectTo, omitLength }) {
      const id = `F${String(++fileCounter).padStart(8, '0')}`;
      hosted.set(id, { name, data, redirectTo, omitLength });
      const link = `${url}/files/${id}/${encodeURIComponent(name)}`;
      return { id, name, title: name, mimetype: mimetype ?? 'application/octet-stream', size: data.length, mode: 'hosted', url_private: link, url_private_download: link };
    },
    downloads,
    uploads: () => completed,
    socketCount: () => sockets4Mode.size,
    sendSocketEvent(event, o = {}) {
      const socket = [...sockets4Mode][0];
      if (!socket) return Promise.reject(new Error('no Socket Mode connection'));
      const eventId = o.eventId ?? `Ev${String(++eventCounter).padStart(8, '0')}`;
      const envelopeId = `env-${eventId}`;
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ack for ${envelopeId} within 3 s`)), 3_000);
        acks.set(envelopeId, () => {
          clearTimeout(timer);
          acks.delete(envelopeId);
          resolve();
        });
        socket.send(JSON.stringify({ envelope_id: envelopeId, type: 'events_api', accepts_response_payload: false, retry_attempt: 0, payload: eventEnvelope(ws, event, eventId) }));
      });
    },
    async close() {
      for (const socket of sockets4Mode) socket.terminate();
      wss.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

function parseArgs(raw: string, contentType: string): Record<string, unknown> {
  if (!raw) return {};
  if (contentType.includes('application/json')) return JSON.parse(raw) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    if (v === 'true' || v === 'false') out[k] = v === 'true';
    else if (/^[[{]/.test(v)) {
      try {
        out[k] = JSON.parse(v);
      } catch {
        out[k] = v;
      }
    } else out[k] = v;
  }
  return out;
}

/** Slack's size limits on a message: 40,000 characters of text, 3,000 in one section block, 50 blocks. */
function sizeError(args: Record<string, unknown>): string | undefined {
  if (typeof args.text === 'string' && args.text.length > 40_000) return 'msg_too_long';
  const blocks = args.blocks;
  if (!Array.isArray(blocks)) return undefined;
  if (blocks.length > 50) return 'invalid_blocks';
  const sectionTooLong = (b: unknown) => {
    const text = (b as { type?: string; text?: { text?: unknown } }).text?.text;
    return (b as { type?: string }).type === 'section' && typeof text === 'string' && text.length > 3_000;
  };
  return blocks.some(sectionTooLong) ? 'invalid_blocks' : undefined;
}

/** Text carried by markdown_text chunks (the other chunk kinds are cards and blocks). */
function chunkText(chunks: Array<Record<string, unknown>>): string {
  return chunks.map((c) => (c.type === 'markdown_text' && typeof c.text === 'string' ? c.text : '')).join('');
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
