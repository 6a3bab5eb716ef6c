import { Events, type Client, type Interaction, type Message } from 'discord.js';
import { Routes, type APIMessage } from 'discord-api-types/v10';
import { systemClock, type Clock } from '../../src/basics/clock.js';
import type { Config } from '../../src/settings/config.js';
import { createKeyedLine } from '../../src/basics/keyed-line.js';
import type { Adapter, GatewayApi } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import type { Leadership } from '../../src/state/cluster/leadership.js';
import { createClient, loginUntilReady, type ConnectOptions } from './connect.js';
import { conversationOf, toInbound } from './inbound.js';
import { createDiscordReader } from './conversation-reader.js';
import { handleButton, handleSlashCommand, type InteractionDeps } from './interactions.js';
import { createDiscordPort, type DiscordPort } from './outbound-port.js';
import { textMessage } from './render.js';
import { registerCommands } from './register-commands.js';

/**
 * The Discord adapter: discord.js client in, gateway calls out, and the outbound port back.
 * Every handler catches its own errors: one bad event must never take the process down.
 */

export interface DiscordAdapterOptions {
  config: NonNullable<Config['discord']>;
  gateway: GatewayApi;
  log: Logger;
  /** Judges interaction token age (default: system time). */
  clock?: Clock;
  /**
   * Several instances on PostgreSQL: only the lease holder connects to the gateway (Discord
   * delivers each event to every connection of a bot); the others send through REST only.
   */
  leadership?: Leadership;
  /** Test and tuning knobs; the defaults suit production. */
  timing?: Pick<ConnectOptions, 'restTimeoutMs' | 'readyTimeoutMs' | 'waitGuildTimeoutMs'> & { typingRenewMs?: number; lineWaitMs?: number };
}

export interface DiscordAdapter extends Adapter {
  readonly port: DiscordPort;
  /** The live discord.js client (null before start and after stop). */
  readonly client: Client | null;
}

/**
 * Longest an event waits for the one before it in its channel (default): a handover that hangs
 * (a stalled store) holds the channel's later messages this long at most, then they go on.
 */
const LINE_WAIT_MS = 10_000;

export async function createDiscordAdapter(opts: DiscordAdapterOptions): Promise<DiscordAdapter> {
  const log = opts.log;
  const connectOptions: ConnectOptions = { token: opts.config.token, apiUrl: opts.config.apiUrl, log, ...opts.timing };
  const client = createClient(connectOptions);
  const reader = createDiscordReader({ rest: client.rest, log, botId: () => client.user?.id });
  const port = createDiscordPort(client.rest, log, opts.timing?.typingRenewMs, reader, opts.config.apiUrl);
  opts.gateway.registerPort(port);
  let live: Client | null = null;

  const clock = opts.clock ?? systemClock;
  const deps: InteractionDeps = {
    gateway: opts.gateway,
    log,
    now: () => clock.now(),
    postEcho: async (channelId, content) => ((await client.rest.post(Routes.channelMessages(channelId), { body: textMessage(content) })) as APIMessage).id,
    deleteEcho: async (channelId, messageId) => {
      await client.rest.delete(Routes.channelMessage(channelId, messageId));
    },
  };

  client.on(Events.MessageCreate, (message: Message) => {
    void onMessage(message).catch((err: unknown) => log.error({ err: String(err), messageId: message.id }, 'discord: message handling failed'));
  });
  client.on(Events.InteractionCreate, (interaction: Interaction) => {
    void onInteraction(interaction).catch((err: unknown) => log.error({ err: String(err), interactionId: interaction.id }, 'discord: interaction handling failed'));
  });
  /**
   * Per channel: the events (messages, edits, deletions) handed to the gateway one after the other
   * in the order Discord sent them (src/basics/keyed-line.ts): a message is accepted (its work row
   * committed) before the channel's next one is looked at, so a thread's rows are written in
   * posting order whatever the load. Each event waits `lineWaitMs` at most for the one before it.
   */
  const line = createKeyedLine({
    waitMs: opts.timing?.lineWaitMs ?? LINE_WAIT_MS,
    onLate: (channelId, what, waitedMs) => log.warn({ channelId, what, waitedMs }, 'discord: the channel\'s previous event is still being handled; going on without waiting for it'),
  });
  const inLine = (channelId: string, what: string, work: () => Promise<void>): Promise<void> => line.run(channelId, what, work);
  // Edits and deletions, read from the raw gateway packets: the message cache is off, so discord.js
  // would not emit them for messages it never cached. Only noted thread context cares.
  client.on(Events.Raw, (packet: { t?: string; d?: { id?: string; channel_id?: string; guild_id?: string; content?: string } }) => {
    if ((packet.t !== 'MESSAGE_UPDATE' && packet.t !== 'MESSAGE_DELETE') || !packet.d?.id || !packet.d.channel_id || !packet.d.guild_id) return;
    if (packet.t === 'MESSAGE_UPDATE' && typeof packet.d.content !== 'string') return; // an embed-only update
    const channel = client.channels.cache.get(packet.d.channel_id);
    if (!channel?.isThread() || !opts.gateway.reviseContext) return;
    const conversation = conversationOf(packet.d.channel_id, packet.d.guild_id, true);
    const { id, channel_id: channelId } = packet.d;
    const text = packet.t === 'MESSAGE_DELETE' ? null : (packet.d.content ?? '');
    // In the channel's line: a revision Discord sent before a message is in the noted context
    // before that message's turn reads it.
    void inLine(channelId, 'revision', async () => {
      await opts.gateway.reviseContext?.(conversation, id, text);
    }).catch((err: unknown) => log.error({ err: String(err), messageId: id }, 'discord: could not apply an edit or deletion'));
  });
  client.on(Events.Error, (err) => log.error({ err: String(err) }, 'discord: client error'));
  client.on(Events.Warn, (message) => log.warn({ detail: message }, 'discord: client warning'));
  client.on(Events.ShardError, (err) => log.warn({ err: String(err) }, 'discord: gateway connection error'));
  // discord.js retries every ~0.5 s while Discord is unreachable: say it once, not per attempt.
  let reconnecting = false;
  client.on(Events.ShardReconnecting, () => {
    if (!reconnecting) log.warn('discord: gateway connection lost; reconnecting');
    reconnecting = true;
  });
  client.on(Events.ShardResume, (_id, replayed) => {
    reconnecting = false;
    log.info({ replayed }, 'discord: gateway session resumed');
  });
  client.on(Events.ShardReady, () => {
    if (reconnecting) log.info('discord: gateway reconnected with a new session');
    reconnecting = false;
  });

  async function onMessage(message: Message): Promise<void> {
    const botId = client.user?.id;
    if (!botId) return;
    const inbound = toInbound(message, botId);
    if (!inbound) {
      log.debug({ messageId: message.id }, 'discord: message is not for the bot (own or a bot outside a thread, system message or empty)');
      return;
    }
    await inLine(message.channelId, 'message', async () => {
      const verdict = await opts.gateway.handleMessage(inbound);
      log.debug({ messageId: message.id, verdict }, 'discord: message handed to the gateway');
    });
  }

  async function onInteraction(interaction: Interaction): Promise<void> {
    if (interaction.isButton()) await handleButton(interaction, deps);
    else if (interaction.isChatInputCommand()) await handleSlashCommand(interaction, deps);
  }

  async function connect(): Promise<void> {
    await loginUntilReady(client, connectOptions);
    live = client;
    const applicationId = client.application?.id;
    if (!applicationId) {
      log.warn('discord: READY carried no application id; /hermes was not registered');
    } else {
      // The bot still works by mention and DM without the command, so a failure here is logged, not fatal.
      await registerCommands(client.rest, applicationId, opts.config.guildId, log).catch((err: unknown) =>
        log.warn({ err: String(err) }, 'discord: could not register /hermes; mentions and DMs still work. Check the bot was invited with the applications.commands scope.'),
      );
    }
    log.info({ user: client.user?.tag, guilds: client.guilds.cache.size }, 'discord: connected');
  }

  return {
    port,
    get client() {
      return live;
    },
    async start(): Promise<void> {
      if (!opts.leadership) return connect();
      // A standby instance still answers turns it runs and posts reminders: REST needs only the token.
      client.rest.setToken(opts.config.token);
      await opts.leadership.start({
        elected: connect,
        async deposed() {
          live = null;
          await client.destroy();
          client.rest.setToken(opts.config.token);
          log.warn('discord: gave up the gateway connection (another instance holds it now); still sending through REST');
        },
      });
      log.info('discord: REST ready; the gateway connection is held by whichever instance holds the lease');
    },
    async stop(): Promise<void> {
      await opts.leadership?.stop();
      port.stopAll();
      live = null;
      await client.destroy();
    },
  };
}
