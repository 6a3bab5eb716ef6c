import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ChannelType,
  GatewayDispatchEvents,
  type APIApplicationCommand,
  type APIAttachment,
  type APITextChannel,
  type APIChannel,
  type APIMessage,
  type APIThreadChannel,
  type APIUser,
} from 'discord-api-types/v10';
import { FakeGateway } from './fake-gateway.js';
import { buttonClick, guildCreate, messageCreate, slashCommand, snowflake, textChannel, thread, user } from './payloads.js';
import { handleRest, logMessage, type RestCall, type RestState } from './fake-rest.js';

/**
 * A fake Discord for tests: REST under /api/v10 and a gateway websocket on one 127.0.0.1 port.
 * It records every REST call, keeps the bot's messages so they can be edited, and has senders that
 * play users: guild mentions, DMs, thread messages, button clicks and `/hermes`.
 */

export type { RestCall } from './fake-rest.js';

export interface FakeDiscordOptions {
  heartbeatIntervalMs?: number;
  /** The bot token REST accepts; unset = any. */
  token?: string;
}

/** A guild role every fake guild has besides @everyone, for role-based access tests. */
export const MEMBER_ROLE = { id: '400000000000000004', name: 'member' };

export interface FakeDiscord {
  /** DISCORD_API_URL for the bot: http://127.0.0.1:PORT/api (discord.js adds /v10). */
  apiUrl: string;
  botUser: APIUser;
  applicationId: string;
  guildId: string;
  channelId: string;
  gateway: FakeGateway;
  calls: RestCall[];
  /** Messages the bot posted or edited, by id. */
  messages: Map<string, APIMessage>;
  commands: { global: APIApplicationCommand[]; guild: Map<string, APIApplicationCommand[]> };
  sendGuildMessage(opts: { author: APIUser; content: string; mentionBot?: boolean; channelId?: string; replyTo?: string; mentions?: APIUser[]; attachments?: APIAttachment[]; roles?: string[] }): string;
  /** Serves a file on the fake CDN and returns the attachment object a message carries. */
  cdnFile(name: string, data: Buffer, contentType: string): APIAttachment;
  /** A message that was posted before (no gateway event): history reads and message fetches return it. */
  seedMessage(opts: { channelId: string; author: APIUser; content?: string; replyTo?: string; extra?: Partial<APIMessage> }): string;
  /** A thread that already exists (with a GUILD_CREATE-independent THREAD_CREATE), so its history can be seeded. */
  openThread(threadId: string, owner: APIUser): void;
  setNick(userId: string, nick: string): void;
  /** History reads in this channel answer 403 Missing Access. */
  denyHistory(channelId: string): void;
  sendDm(opts: { author: APIUser; content: string }): { messageId: string; channelId: string };
  sendThreadMessage(opts: { author: APIUser; content: string; threadId: string; mentionBot?: boolean; mentions?: APIUser[]; roles?: string[] }): string;
  clickButton(opts: { user: APIUser; message: APIMessage; customId: string; roles?: string[] }): string;
  runSlashCommand(opts: { user: APIUser; text: string; channelId?: string; dm?: boolean; roles?: string[] }): { interactionId: string; token: string };
  /** Runs as each REST call arrives, before the fake answers it; undefined removes it. */
  onCall(fn: ((call: RestCall) => void | Promise<void>) | undefined): void;
  /** Resolves with the first recorded call (past or future) that matches. */
  waitForCall(pred: (c: RestCall) => boolean, timeoutMs?: number, label?: string): Promise<RestCall>;
  /** Bot messages posted to a channel, in order. */
  postedIn(channelId: string): RestCall[];
  close(): Promise<void>;
}

export const DEFAULT_USER = user('100000000000000001', 'alice');

export async function startFakeDiscord(opts: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const botUser = user('900000000000000009', 'hermes', true);
  const applicationId = '900000000000000009';
  const guildId = '200000000000000002';
  const channelId = '300000000000000003';
  const channels: APITextChannel[] = [textChannel(channelId, guildId, 'general'), textChannel('300000000000000004', guildId, 'random')];
  const threads = new Map<string, APIThreadChannel>();
  const dmChannels = new Map<string, string>();
  let port = 0;

  const state: RestState = {
    botUser,
    applicationId,
    calls: [],
    messages: new Map(),
    commands: { global: [], guild: new Map() },
    interactionChannels: new Map(),
    channelLog: new Map(),
    nicks: new Map(),
    noHistory: new Set(),
    cdn: new Map(),
    channel: (id): APIChannel | undefined => {
      const c = channels.find((x) => x.id === id) ?? threads.get(id);
      if (c) return c;
      for (const [userId, dmId] of dmChannels) {
        if (dmId === id) return { id, type: ChannelType.DM, name: null, recipients: [user(userId, `user${userId}`)], last_message_id: null };
      }
      return undefined;
    },
    openDm: (userId) => dmFor(userId),
    gatewayUrl: () => `ws://127.0.0.1:${port}/gateway`,
    ...(opts.token !== undefined && { token: opts.token }),
  };
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const l of listeners) l();
  };

  const gateway = new FakeGateway({
    heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 1000,
    botUser,
    applicationId,
    guildCreates: () => [guildCreate(guildId, 'Test Guild', channels, [...threads.values()], botUser, [MEMBER_ROLE])],
    url: () => `ws://127.0.0.1:${port}/gateway`,
  });

  const server = http.createServer((req, res) => {
    handleRest(state, req, res).then(notify, (err: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: String(err), code: 0 }));
    });
  });
  server.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').startsWith('/gateway')) gateway.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;

  function dmFor(userId: string): string {
    let id = dmChannels.get(userId);
    if (!id) {
      id = snowflake();
      dmChannels.set(userId, id);
    }
    return id;
  }

  const mentionPrefix = (mentionBot: boolean | undefined): string => (mentionBot ? `<@${botUser.id}> ` : '');

  return {
    apiUrl: `http://127.0.0.1:${port}/api`,
    botUser,
    applicationId,
    guildId,
    channelId,
    gateway,
    calls: state.calls,
    messages: state.messages,
    commands: state.commands,

    sendGuildMessage({ author, content, mentionBot, channelId: ch, replyTo, mentions: others, attachments, roles }) {
      const id = snowflake();
      const mentions = [...(mentionBot ? [botUser] : []), ...(others ?? [])];
      const payload = messageCreate({ id, channelId: ch ?? channelId, guildId, author, content: mentionPrefix(mentionBot) + content, mentions, roles, ...(replyTo && { replyTo }), attachments });
      logMessage(state, payload);
      gateway.dispatch(GatewayDispatchEvents.MessageCreate, payload);
      return id;
    },

    seedMessage({ channelId: ch, author, content, replyTo, extra }) {
      const id = snowflake();
      logMessage(state, { ...messageCreate({ id, channelId: ch, guildId, author, content: content ?? '', mentions: [], ...(replyTo && { replyTo }) }), ...extra } as APIMessage);
      return id;
    },

    openThread(threadId, owner) {
      if (threads.has(threadId)) return;
      const t = thread(threadId, guildId, channelId, `thread ${threadId}`, owner.id);
      threads.set(threadId, t);
      gateway.dispatch(GatewayDispatchEvents.ThreadCreate, { ...t, newly_created: true });
    },

    setNick(userId, nick) {
      state.nicks.set(userId, nick);
    },

    denyHistory(ch) {
      state.noHistory.add(ch);
    },

    cdnFile(name, data, contentType) {
      const id = snowflake();
      state.cdn.set(id, { data, contentType });
      const url = `http://127.0.0.1:${port}/cdn/attachments/${id}/${encodeURIComponent(name)}`;
      return { id, filename: name, size: data.length, url, proxy_url: url, content_type: contentType };
    },

    sendDm({ author, content }) {
      const id = snowflake();
      const dm = dmFor(author.id);
      gateway.dispatch(GatewayDispatchEvents.MessageCreate, messageCreate({ id, channelId: dm, author, content, mentions: [], dm: true }));
      return { messageId: id, channelId: dm };
    },

    sendThreadMessage({ author, content, threadId, mentionBot, mentions: others, roles }) {
      if (!threads.has(threadId)) {
        const t = thread(threadId, guildId, channelId, `thread ${threadId}`, author.id);
        threads.set(threadId, t);
        gateway.dispatch(GatewayDispatchEvents.ThreadCreate, { ...t, newly_created: true });
      }
      const id = snowflake();
      const mentions = [...(mentionBot ? [botUser] : []), ...(others ?? [])];
      const payload = messageCreate({ id, channelId: threadId, guildId, author, content: mentionPrefix(mentionBot) + content, mentions, roles });
      logMessage(state, payload);
      gateway.dispatch(GatewayDispatchEvents.MessageCreate, payload);
      return id;
    },

    clickButton({ user: clicker, message, customId, roles }) {
      const dm = state.channel(message.channel_id)?.type === ChannelType.DM;
      const payload = buttonClick({ applicationId, user: clicker, channelId: message.channel_id, message, customId, roles, ...(!dm && { guildId }) });
      state.interactionChannels.set(payload.token, { channelId: message.channel_id, createdAt: Date.now() });
      gateway.dispatch(GatewayDispatchEvents.InteractionCreate, payload);
      return payload.id;
    },

    onCall(fn) {
      state.onCall = fn;
    },
    runSlashCommand({ user: caller, text, channelId: ch, dm, roles }) {
      const commandId = state.commands.guild.get(guildId)?.[0]?.id ?? state.commands.global[0]?.id ?? snowflake();
      const target = dm ? dmFor(caller.id) : (ch ?? channelId);
      const channelType = dm ? ChannelType.DM : threads.has(target) ? ChannelType.PublicThread : ChannelType.GuildText;
      const payload = slashCommand({ applicationId, user: caller, channelId: target, commandId, text, channelType, roles, ...(!dm && { guildId }) });
      state.interactionChannels.set(payload.token, { channelId: target, createdAt: Date.now() });
      gateway.dispatch(GatewayDispatchEvents.InteractionCreate, payload);
      return { interactionId: payload.id, token: payload.token };
    },

    waitForCall(pred, timeoutMs = 15_000, label = 'a matching REST call') {
      const found = state.calls.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const hit = state.calls.find(pred);
          if (hit) {
            cleanup();
            resolve(hit);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`fake discord: timed out after ${timeoutMs} ms waiting for ${label}; calls so far:\n${state.calls.map((c) => `${c.method} ${c.path}`).join('\n')}`));
        }, timeoutMs);
        const cleanup = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
      });
    },

    postedIn(ch) {
      return state.calls.filter((c) => c.method === 'POST' && c.path === `/channels/${ch}/messages`);
    },

    async close() {
      await gateway.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
