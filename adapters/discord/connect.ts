import { once } from 'node:events';
import { Client, Events, GatewayIntentBits, Options, Partials } from 'discord.js';
import { GatewayCloseCodes } from 'discord-api-types/v10';
import type { Logger } from '../../src/basics/log.js';

/**
 * Builds the discord.js client and logs it in. discord.js never gives up on some failures (a
 * refused intent leaves `login()` pending forever), so readiness races the close codes that cannot
 * recover and a deadline, and each of them ends in one sentence that says what to do.
 */

export interface ConnectOptions {
  token: string;
  apiUrl?: string;
  log: Logger;
  /** Per REST request. */
  restTimeoutMs?: number;
  /** Login until READY (and the guilds) arrived. */
  readyTimeoutMs?: number;
  /** How long discord.js waits for GUILD_CREATEs after READY (its default is 15 s). */
  waitGuildTimeoutMs?: number;
}

export const CONNECT_TEXT = {
  disallowedIntents:
    'Discord refused the Message Content intent (close code 4014). Fix: open https://discord.com/developers/applications, pick this application, go to Bot → Privileged Gateway Intents, enable "Message Content Intent", save, and start hermes again.',
  invalidIntents: 'Discord rejected the requested intents (close code 4013). This is a bug in hermes; please report it.',
  badToken:
    'Discord rejected DISCORD_TOKEN (authentication failed). Fix: copy the bot token from https://discord.com/developers/applications → your application → Bot → Reset Token, and set DISCORD_TOKEN to it.',
  timeout: (ms: number) => `Discord did not become ready within ${Math.round(ms / 1000)} s. Check the network path to DISCORD_API_URL (or discord.com) and that DISCORD_TOKEN is a bot token.`,
  fatalClose: (code: number) => `Discord closed the gateway with code ${code} and it cannot reconnect; see https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-close-event-codes.`,
} as const;

export function createClient(opts: ConnectOptions): Client {
  return new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
    // DMs arrive for channels discord.js has never seen; without the partial it drops them.
    partials: [Partials.Channel],
    rest: { ...(opts.apiUrl && { api: opts.apiUrl }), timeout: opts.restTimeoutMs ?? 15_000 },
    waitGuildTimeout: opts.waitGuildTimeoutMs ?? 15_000,
    // We never read old messages from the cache. Caching them would also make discord.js drop a
    // replayed MESSAGE_CREATE silently, hiding it from the gateway's own dedupe by message id.
    makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
    allowedMentions: { parse: [], users: [], roles: [], repliedUser: false },
  });
}

/** Logs in and resolves when discord.js is ready; rejects with a clear message otherwise. */
export async function loginUntilReady(client: Client, opts: ConnectOptions): Promise<void> {
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const controller = new AbortController();
  const { signal } = controller;

  const ready = once(client, Events.ClientReady, { signal }).then(() => undefined);
  const refused = new Promise<never>((_, reject) => {
    const onDisconnect = (event: { code: number }): void => reject(new Error(closeMessage(event.code)));
    client.on(Events.ShardDisconnect, onDisconnect);
    signal.addEventListener('abort', () => client.off(Events.ShardDisconnect, onDisconnect), { once: true });
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(CONNECT_TEXT.timeout(readyTimeoutMs))), readyTimeoutMs);
  });
  const login = client.login(opts.token).then(
    () => new Promise<never>(() => undefined),
    (err: unknown) => {
      throw new Error(loginErrorMessage(err));
    },
  );
  try {
    await Promise.race([ready, refused, deadline, login]);
  } catch (err) {
    // Not logged here: whoever started the connection reports it, once (main at start, the
    // leadership loop on a takeover).
    const message = err instanceof Error ? err.message : String(err);
    await client.destroy().catch(() => undefined);
    throw new Error(message, { cause: err });
  } finally {
    clearTimeout(timer);
    controller.abort();
    // The losers of the race may settle later; their outcome no longer matters.
    ready.catch(() => undefined);
    login.catch(() => undefined);
  }
}

function closeMessage(code: number): string {
  if (code === GatewayCloseCodes.DisallowedIntents) return CONNECT_TEXT.disallowedIntents;
  if (code === GatewayCloseCodes.InvalidIntents) return CONNECT_TEXT.invalidIntents;
  if (code === GatewayCloseCodes.AuthenticationFailed) return CONNECT_TEXT.badToken;
  return CONNECT_TEXT.fatalClose(code);
}

function loginErrorMessage(err: unknown): string {
  const e = err as { code?: string; status?: number; message?: string };
  if (e.code === 'TokenInvalid' || e.status === 401) return CONNECT_TEXT.badToken;
  return `Could not reach Discord: ${e.message ?? String(err)}. Check DISCORD_API_URL (or the network path to discord.com).`;
}
