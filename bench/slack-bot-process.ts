import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { createCore } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createSlackAdapter } from '../adapters/slack/slack-adapter.js';
import { builtinTools } from '../tools/index.js';

/**
 * The bot under load, in its own process so the load generator and the fake servers do not share
 * its event loop or CPU: the real core and the Slack adapter in HTTP mode, wired as src/main.ts
 * wires them, configured from the environment. It reports event-loop delay and peak RSS over IPC.
 *
 * Messages from the parent: `reset` (start a measurement window), `stats`, `stop`.
 */
export interface BotStats { lagP50Ms: number; lagP99Ms: number; lagMaxMs: number; peakRssMb: number }
export type BotMessage = { type: 'ready'; port: number } | { type: 'stats'; stats: BotStats } | { type: 'reset-ok' } | { type: 'error'; message: string };

const send = (m: BotMessage) => process.send?.(m);

async function main(): Promise<void> {
  const result = loadConfig(process.env);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const config = result.config;
  const log = pino({ level: 'silent' });
  const core = await createCore({ config, log, tools: builtinTools(), reminders: false });
  let ready = false;
  const adapter = await createSlackAdapter({ config: config.slack!, httpPort: 0, gateway: core.gateway, store: core.store, log, isReady: () => ready });
  await adapter.start();
  await core.start();
  ready = true;

  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  let peakRss = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 50);
  sampler.unref();

  process.on('message', (m: { type: string }) => {
    if (m.type === 'reset') {
      lag.reset();
      peakRss = process.memoryUsage.rss();
      send({ type: 'reset-ok' });
    } else if (m.type === 'stats') {
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
      send({ type: 'stats', stats: { lagP50Ms: lag.percentile(50) / 1e6, lagP99Ms: lag.percentile(99) / 1e6, lagMaxMs: lag.max / 1e6, peakRssMb: peakRss / 2 ** 20 } });
    } else if (m.type === 'stop') {
      void (async () => {
        await adapter.stop();
        await core.close();
        process.exit(0);
      })();
    }
  });
  // The parent going away must not leave a bot behind.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', port: adapter.listeningPort()! });
}

main().catch((err: Error) => {
  send({ type: 'error', message: err.message });
  process.exit(1);
});
