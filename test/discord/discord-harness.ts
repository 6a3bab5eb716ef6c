import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { createDiscordAdapter, type DiscordAdapter } from '../../adapters/discord/discord-adapter.js';
import { createCore, type Core } from '../../src/app/app.js';
import { loadConfig } from '../../src/settings/load-config.js';
import type { Config } from '../../src/settings/config.js';
import { createLogger } from '../../src/basics/log.js';
import type { Clock } from '../../src/basics/clock.js';
import { defineTool, type AnyTool } from '../../src/capabilities/toolkit/tool-api.js';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';

/**
 * One bot as production runs it: the real core (SQLite in a temp dir, the openai SDK against the
 * fake model) and the real discord.js client against the fake Discord. `restart()` closes adapter
 * and core and builds both again on the same data dir, as a process restart would.
 */

export interface Bot {
  discord: FakeDiscord;
  openai: FakeOpenAI;
  core: Core;
  adapter: DiscordAdapter;
  config: Config;
  /** Every JSON log line the bot wrote. */
  logs: Array<Record<string, unknown>>;
  riskyRuns: Array<{ target: string }>;
  /** Resolves with the first log line (past or future) that matches. */
  waitForLog(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const FAST_TIMING = { restTimeoutMs: 5000, readyTimeoutMs: 20_000, waitGuildTimeoutMs: 500, typingRenewMs: 200 };

export async function startBot(
  opts: { env?: Record<string, string>; heartbeatIntervalMs?: number; discord?: FakeDiscord; tools?: AnyTool[]; /** The core's clock (a manual clock drives scheduled runs and budget days). */ clock?: Clock } = {},
): Promise<Bot> {
  const discord = opts.discord ?? (await startFakeDiscord({ heartbeatIntervalMs: opts.heartbeatIntervalMs }));
  const openai = await startFakeOpenAI();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-discord-'));
  const result = loadConfig(
    {
      HERMES_DATA_DIR: dataDir,
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: 'test',
      HERMES_MODEL_RETRIES: '0',
      DISCORD_TOKEN: 'discord-test-token',
      DISCORD_API_URL: discord.apiUrl,
      // Indicators show at once here so tests can see them; the product waits (HERMES_PROGRESS_DELAY_MS).
      HERMES_PROGRESS_DELAY_MS: '0',
      // Answers posted whole: these tests read them as posts; streaming has its own tests.
      HERMES_STREAMING: 'off',
      ...opts.env,
    },
    dataDir,
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  const logs: Array<Record<string, unknown>> = [];
  const logListeners = new Set<() => void>();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      for (const l of [...logListeners]) l();
      done();
    },
  });
  const waitForLog = (pred: (line: Record<string, unknown>) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const hit = logs.find(pred);
        if (hit) {
          clearTimeout(timer);
          logListeners.delete(listener);
          resolve(hit);
        }
        return hit !== undefined;
      };
      const listener = (): void => void check();
      const timer = setTimeout(() => {
        logListeners.delete(listener);
        reject(new Error(`no matching log line within ${timeoutMs} ms; last lines:\n${logs.slice(-15).map((l) => JSON.stringify(l)).join('\n')}`));
      }, timeoutMs);
      if (!check()) logListeners.add(listener);
    });
  const log = createLogger('debug', sink);
  const riskyRuns: Array<{ target: string }> = [];
  const risky = defineTool({
    name: 'risky_action',
    description: 'Does something that needs a human to approve it.',
    input: z.object({ target: z.string() }),
    needsApproval: true,
    sideEffects: true,
    run: async (args) => {
      riskyRuns.push(args);
      return `did it to ${args.target}`;
    },
  });

  const build = async (): Promise<{ core: Core; adapter: DiscordAdapter }> => {
    const core = await createCore({ config, log, extraTools: [risky, ...(opts.tools ?? [])], invalidTraces: 'throw', ...(opts.clock && { clock: opts.clock }) });
    const adapter = await createDiscordAdapter({ config: config.discord!, gateway: core.gateway, log, timing: FAST_TIMING });
    await adapter.start();
    await core.start();
    return { core, adapter };
  };

  let parts = await build();
  const bot: Bot = {
    discord,
    openai,
    get core() {
      return parts.core;
    },
    get adapter() {
      return parts.adapter;
    },
    config,
    logs,
    riskyRuns,
    waitForLog,
    async restart() {
      await parts.adapter.stop();
      await parts.core.close();
      parts = await build();
    },
    async close() {
      await parts.adapter.stop().catch(() => undefined);
      await parts.core.close().catch(() => undefined);
      await openai.close();
      if (!opts.discord) await discord.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return bot;
}
