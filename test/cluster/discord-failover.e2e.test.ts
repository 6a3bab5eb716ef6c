import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/settings/load-config.js';
import { createCore, type Core } from '../../src/app/app.js';
import type { PostgresStore } from '../../src/state/store/postgres-store.js';
import { createDiscordAdapter, type DiscordAdapter } from '../../adapters/discord/discord-adapter.js';
import { startFakeDiscord, DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { FAST_TIMING } from '../discord/discord-harness.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * Two instances with Discord on one PostgreSQL database, the real discord.js client against the
 * fake Discord: only the lease holder opens a gateway connection; when it loses the database (as
 * good as dead to the others) it steps down, and the other connects within HERMES_FAILOVER_S and
 * answers the next message.
 */
const pgUrl = await postgresForTests();
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const FAILOVER_S = 4;

describe.skipIf(!pgUrl)('Discord with two instances', () => {
  it('connects one instance to the gateway, and the other takes over within HERMES_FAILOVER_S', async () => {
    const schema = await freshSchema(pgUrl!);
    cleanups.push(() => schema.drop());
    const discord = await startFakeDiscord();
    cleanups.push(() => discord.close());
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());

    const instance = async (): Promise<{ core: Core; adapter: DiscordAdapter }> => {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-failover-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const loaded = loadConfig({
        OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: FAKE_OPENAI_KEY, HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir,
        HERMES_STREAMING: 'off', DISCORD_TOKEN: 'discord-test-token', DISCORD_API_URL: discord.apiUrl, HERMES_STORE_URL: schema.url, HERMES_FAILOVER_S: String(FAILOVER_S),
      }, dataDir);
      if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
      const log = pino({ level: process.env.TEST_LOG ?? 'silent' });
      const core = await createCore({ config: loaded.config, log });
      const adapter = await createDiscordAdapter({ config: loaded.config.discord!, gateway: core.gateway, log, timing: FAST_TIMING, leadership: core.leadership('discord-gateway') });
      cleanups.push(async () => {
        await adapter.stop();
        await core.close();
      });
      await adapter.start();
      await core.start();
      return { core, adapter };
    };

    const a = await instance();
    await waitUntil(() => a.adapter.client !== null, 20_000);
    const b = await instance(); // its first try for the lease is done when start() returns
    expect(discord.gateway.identifies).toHaveLength(1);
    expect(b.adapter.client).toBeNull();

    // A loses its database: it cannot renew, steps down and disconnects; B is elected once A's lease ends.
    const cutAt = Date.now();
    const storeOfA = a.core.store;
    if (!('pool' in storeOfA)) throw new Error('expected the PostgreSQL store');
    await (storeOfA as PostgresStore).pool.end();
    await waitUntil(() => discord.gateway.identifies.length === 2, FAILOVER_S * 1000 + 2_000);
    const tookMs = Date.now() - cutAt;
    expect(tookMs).toBeLessThan(FAILOVER_S * 1000);
    await waitUntil(() => b.adapter.client !== null, 10_000);

    openai.enqueue({ text: 'answered after the failover' });
    discord.sendGuildMessage({ author: DEFAULT_USER, content: 'still there?', mentionBot: true });
    await discord.waitForCall((c) => c.method === 'POST' && (c.body as { content?: string } | undefined)?.content === 'answered after the failover', 15_000);
  }, 90_000);
});

async function waitUntil(check: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
