import { loadConfig, secretValues, type Config } from './config.js';
import { createLogger } from './log.js';
import { createCore, type Core } from './app.js';
import { StartupRefusal } from './startup-refusal.js';
import { installCrashHandlers } from './crash-handlers.js';
import type { Adapter } from './gateway/ports.js';
// The composition root: the one place that knows every adapter and the built-in tools.
import { builtinTools, toolSettingsFromEnv } from '../tools/index.js';
import { createShellAdapter } from '../adapters/shell/shell-adapter.js';

async function main(): Promise<void> {
  const result = loadConfig(process.env);
  if (!result.ok) {
    for (const line of result.errors) process.stderr.write(`config error: ${line}\n`);
    process.exit(2);
  }
  const config: Config = { ...result.config, tools: mergeToolSettings(result.config.tools, toolSettingsFromEnv(process.env)) };
  const shellMode = process.argv.includes('--chat') || (!config.slack && !config.discord);
  // The terminal chat owns stdout; logs go to stderr there, to stdout otherwise.
  const log = createLogger(config.logLevel, undefined, shellMode ? 2 : 1, secretValues(config));

  let core: Core | undefined;
  installCrashHandlers(process, { log, flush: async () => core?.flushTraces(), exit: (code) => process.exit(code) });

  for (const w of result.warnings) log.warn(w);
  core = await createCore({ config, log, tools: builtinTools() });
  let ready = false;
  const adapters: Adapter[] = [];
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.allSettled(adapters.map((a) => a.stop()));
    await core.close().catch((err: Error) => log.error({ err: err.message }, 'shutdown failed'));
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  if (shellMode) {
    adapters.push(
      createShellAdapter({
        gateway: core.gateway,
        input: process.stdin,
        output: process.stdout,
        onEnd: () => {
          void core.gateway.idle().then(() => shutdown(0));
        },
      }),
    );
    if (process.stdin.isTTY) {
      process.stdout.write(`Hermes terminal chat · model ${config.model.name}${config.model.baseURL ? ` at ${config.model.baseURL}` : ''} · /help for commands, Ctrl-D to quit\n`);
    }
  } else {
    if (config.slack) {
      const { createSlackAdapter } = await import('../adapters/slack/slack-adapter.js');
      adapters.push(await createSlackAdapter({ config: config.slack, httpPort: config.port, gateway: core.gateway, store: core.store, log: log.child({ adapter: 'slack' }), isReady: () => ready }));
    }
    if (config.discord) {
      const { createDiscordAdapter } = await import('../adapters/discord/discord-adapter.js');
      adapters.push(await createDiscordAdapter({ config: config.discord, gateway: core.gateway, store: core.store, log: log.child({ adapter: 'discord' }), leadership: core.leadership('discord-gateway') }));
    }
  }

  // The terminal needs no connection, and recovery must show a pending approval before the
  // first piped line is read; chat platforms must be connected before recovery posts anything.
  if (shellMode) await core.start();
  try {
    for (const a of adapters) await a.start();
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'could not connect');
    process.stderr.write(`${(err as Error).message}\n`);
    await shutdown(1);
    return;
  }
  if (!shellMode) await core.start();
  ready = true;
  log.info({ adapters: adapters.map((a) => a.port.platform), model: config.model.name }, 'ready');
}

function mergeToolSettings(fromFile: Config['tools'], fromEnv: Record<string, Record<string, unknown>>): Config['tools'] {
  const out: Config['tools'] = { ...fromFile };
  for (const [name, settings] of Object.entries(fromEnv)) {
    out[name] = { ...(out[name] ?? {}), settings: { ...settings, ...(out[name]?.settings ?? {}) } };
  }
  return out;
}

/** `npm run eval` / `npm run replay`: the eval harness gets the built-in tools from here, like the bot. */
async function runToolCommand(command: 'eval' | 'replay', argv: string[]): Promise<void> {
  const { runCli } = await import('./cli/parse-cli.js');
  const cli = command === 'eval' ? await import('./eval/eval-cli.js') : await import('./eval/replay-cli.js');
  runCli(argv, (args, io) => cli.main(args, io, { tools: builtinTools }), command === 'eval' ? 'The eval harness' : 'Replay');
}

const command = process.argv[2];
if (command === 'eval' || command === 'replay') void runToolCommand(command, process.argv.slice(3));
else {
  main().catch((err: Error) => {
    process.stderr.write(`hermes failed to start: ${err.message}\n`);
    process.exit(err instanceof StartupRefusal ? 2 : 1);
  });
}
