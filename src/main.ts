import { rmdir } from 'node:fs/promises';
import path from 'node:path';
import { createReceiptJournal } from './gateway/receipts.js';
import { loadConfig } from './settings/load-config.js';
import { mergeToolSettings } from './settings/config-file.js';
import { secretValues } from './settings/config-secrets.js';
import type { Config } from './settings/config.js';
import { createLogger } from './basics/log.js';
import { createCore, type Core } from './app/app.js';
import { StartupRefusal } from './basics/startup-refusal.js';
import { installCrashHandlers } from './app/crash-handlers.js';
import { applyEnvFile, ignoredLinesWarning } from './basics/env-file.js';
import { dataDirError, isDataDirError, prepareDataDir } from './app/data-dir.js';
import { probeModel, probeWarning } from './runtime/provider/model-probe.js';
import { chatLogDestination } from './app/chat-log.js';
import type { Adapter } from './basics/ports.js';
// The composition root: the one place that knows every adapter and the built-in tools.
import { builtinToolCatalogue, builtinTools, toolSettingsFromEnv } from '../tools/index.js';
import { checkProfiles, knownTools } from './settings/agent-profiles.js';
import { createShellAdapter } from '../adapters/shell/shell-adapter.js';
import { banner, logNotice } from '../adapters/shell/shell-text.js';

const NOTHING_TO_TALK_TO =
  'hermes: nothing to talk to: no Slack or Discord settings (SLACK_BOT_TOKEN with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, or DISCORD_TOKEN) and no input on stdin; set them, or start it in an interactive terminal (docker run -it).';
import { systemClock } from './basics/clock.js';
import { probeSandbox } from './capabilities/sandbox/probe.js';
import { sandboxLimits } from './capabilities/sandbox/limits.js';
import { runCodeTool } from '../tools/run-code.js';
import { startFailure } from './app/start-failure.js';
import { createBotHttp, listenHost } from './app/bot-http.js';
import { sandboxWorkspaceRoot, workspaceRootNote } from './capabilities/sandbox/workspace-root.js';
import { openSkillLibrary } from './capabilities/skills/skill-library.js';
import { feedbackReader } from './state/feedback/feedback-store.js';

async function main(): Promise<void> {
  const envFile = applyEnvFile(process.env, process.cwd());
  if (envFile.kind === 'error') {
    process.stderr.write(`config error: ${envFile.message}\n`);
    process.exit(2);
  }
  const result = loadConfig(process.env);
  if (!result.ok) {
    for (const line of result.errors) process.stderr.write(`config error: ${line}\n`);
    process.exit(2);
  }
  const merged: Config = { ...result.config, tools: mergeToolSettings(result.config.tools, toolSettingsFromEnv(process.env)) };
  // Profiles name tools, which are known only here, where the tools are.
  // MCP tools are known only once their servers answer: a profile may name them (mcp__<server>__…)
  // for any configured server, and a sub-agent is offered the ones that need no approval.
  const mcpNamed = [...merged.agents.values()].flatMap((p) => p.tools.filter((t) => merged.extensions.servers.some((s) => t.startsWith(`mcp__${s.name}__`))));
  const agents = checkProfiles(merged.agents, [...knownTools(builtinToolCatalogue(), merged.tools), ...mcpNamed.map((name) => ({ name, needsApproval: 'depends' as const }))]);
  if (agents.errors.length) {
    for (const line of agents.errors) process.stderr.write(`config error: ${line}\n`);
    process.exit(2);
  }
  const checked: Config = { ...merged, agents: agents.profiles };
  const shellMode = process.argv.includes('--chat') || (!checked.slack && !checked.discord);
  const dataProblem = await prepareDataDir(checked.dataDir);
  if (dataProblem) {
    process.stderr.write(`config error: ${dataProblem}\n`);
    process.exit(2);
  }
  // As root, run_code's sandbox user must be able to reach the workspaces (workspace-root.ts).
  const workspaceRoot = await sandboxWorkspaceRoot({
    workspaceDir: checked.files.workspaceDir,
    dataDir: checked.dataDir,
    chosen: (process.env.HERMES_WORKSPACE_DIR ?? '').trim() !== '',
    runsAsRoot: process.getuid?.() === 0,
  });
  const config: Config = { ...checked, files: { ...checked.files, workspaceDir: workspaceRoot.dir } };
  // The terminal chat owns stdout. In a terminal, logs go to a file (warnings also reach the chat
  // as a short notice between its lines); piped or supervised, JSON lines on stderr as anywhere else.
  const interactive = shellMode && process.stdin.isTTY === true && process.stdout.isTTY === true;
  const chatLogFile = path.join(config.dataDir, 'chat.log');
  // Warnings logged before the chat is drawn (settings, the sandbox check) wait here, and are shown
  // under the banner; otherwise they would reach only the log file.
  const early: string[] = [];
  let notice: (text: string) => void = (text) => void early.push(text);
  const chatLog = interactive ? chatLogDestination(chatLogFile, config.logLevel, (level, msg) => notice(logNotice(level, msg))) : undefined;
  const log = createLogger(config.logLevel, chatLog, shellMode ? 2 : 1, secretValues(config));
  if (envFile.kind === 'loaded') log.info({ file: envFile.file, variables: envFile.applied }, 'read settings from .env');

  let core: Core | undefined;
  installCrashHandlers(process, { log, flush: async () => core?.flushTraces(), exit: (code) => process.exit(code) });

  for (const w of [ignoredLinesWarning(envFile), ...result.warnings, ...agents.warnings]) if (w) log.warn(w);
  const rootNote = workspaceRootNote(workspaceRoot);
  if (rootNote) log.info(rootNote);
  // The sandbox probe (one real run) goes on while the store opens and, for a chat platform, while
  // its adapter is made (Bolt loads, auth.test); run_code joins the tools before any adapter starts,
  // so the first message already sees it.
  const probing = probeSandbox({ workspaceDir: config.files.workspaceDir, limits: sandboxLimits(config.files), clock: systemClock })
    .catch((err: Error) => ({ ok: false as const, problem: `the sandbox check failed: ${err.message}` }));
  try {
    const skills = await openSkillLibrary({ dir: config.extensions.skillsDir, pins: config.extensions.skillPins, log: log.child({ component: 'skills' }) });
    core = await createCore({ config, log, skills, tools: builtinTools({ agents: config.agents, skills }) });
  } catch (err) {
    if (!isDataDirError(err)) throw err;
    process.stderr.write(`config error: ${dataDirError(config.dataDir, err)}\n`);
    process.exit(2);
  }
  const joinRunCode = async (c: Core) => {
    const probe = await probing;
    if (!probe.ok) log.warn(`run_code is not offered: ${probe.problem}`);
    else {
      for (const u of probe.unavailable) log.warn(`run_code cannot run ${u.language}: ${u.problem}`);
      c.registry.register(runCodeTool(probe.sandbox, { defaultTimeoutMs: config.files.codeTimeoutMs, memoryMb: config.files.codeMemoryMb }));
    }
  };
  // The terminal chat shows the probe's warnings under its banner, so it waits for it here.
  if (shellMode) await joinRunCode(core);
  let ready = false;
  const adapters: Adapter[] = [];
  let stopping = false;
  const dashboard = config.dashboard
    ? (await import('./operations/dashboard/bot-dashboard.js')).createBotDashboard({ ...config, dashboard: config.dashboard }, core.registry, log, core.audit, feedbackReader(core.database.db))
    : undefined;
  // One HTTP server on PORT, when anything needs one: Slack's events (HTTP mode), the dashboard
  // (HERMES_DASHBOARD_TOKEN); it always answers /healthz. Routes register on it (src/app/bot-http.ts).
  const slackHttp = !shellMode && config.slack !== undefined && config.slack.appToken === undefined;
  const http = slackHttp || dashboard ? createBotHttp({ log, isReady: () => ready, dashboard }) : undefined;
  const httpHost = listenHost({ slackHttp, dashboardHost: config.dashboard?.host });
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.allSettled([...adapters.map((a) => a.stop()), http?.stop()]);
    await core.close().catch((err: Error) => log.error({ err: err.message }, 'shutdown failed'));
    // A workspace folder made only for this data folder and never used leaves nothing behind
    // (rmdir removes only an empty folder; one with sessions' files stays for the next start).
    if (workspaceRoot.kind === 'moved') await rmdir(workspaceRoot.dir).catch(() => undefined);
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  // SIGHUP reloads hermes.config.yaml (src/app/config-reload.ts); without a file there is nothing to read.
  process.on('SIGHUP', () => {
    if (!core?.reloadConfig('signal')) log.info('SIGHUP: no config file (HERMES_CONFIG or ./hermes.config.yaml) to reload');
  });

  if (shellMode) {
    const shell = createShellAdapter({
      gateway: core.gateway,
      input: process.stdin,
      output: process.stdout,
      interactive,
      thinkingDelayMs: config.limits.progressDelayMs,
      waitingFile: path.join(config.dataDir, 'chat-waiting.json'),
      onEnd: ({ sawInput }) => {
        // No platform, no terminal, and stdin closed without a byte (e.g. `docker run` without
        // -it): nobody can ever talk to this process, which must not look like a clean exit.
        if (!sawInput && !interactive && !config.slack && !config.discord) {
          process.stderr.write(`${NOTHING_TO_TALK_TO}\n`);
          void shutdown(2);
          return;
        }
        void core.gateway.idle().then(() => shutdown(0));
      },
    });
    adapters.push(shell);
    if (interactive) {
      process.stdout.write(`${banner(config.model.name, config.model.baseURL, chatLogFile)}\n`);
      for (const text of early.splice(0)) process.stdout.write(`${text}\n`);
      notice = shell.notice;
    }
  } else {
    if (config.slack) {
      // Packages Bolt requires and we never use load only if something asks for them: its Socket
      // Mode client in HTTP mode, its OAuth installer in either mode (defer-socket-mode.ts).
      const defer = await import('../adapters/slack/defer-socket-mode.js');
      if (config.slack.appToken === undefined) defer.deferSocketModeClient();
      defer.deferOAuth();
      const { createSlackAdapter } = await import('../adapters/slack/slack-adapter.js');
      adapters.push(await createSlackAdapter({ config: config.slack, http, gateway: core.gateway, database: core.database, receipts: createReceiptJournal(core.database, 'slack'), log: log.child({ adapter: 'slack' }), suggestedPrompts: config.slackAssistant.suggestedPrompts }));
    }
    if (config.discord) {
      const { createDiscordAdapter } = await import('../adapters/discord/discord-adapter.js');
      adapters.push(await createDiscordAdapter({ config: config.discord, gateway: core.gateway, log: log.child({ adapter: 'discord' }), leadership: core.leadership('discord-gateway') }));
    }
    await joinRunCode(core);
  }

  // The terminal needs no connection, and recovery must show a pending approval before the
  // first piped line is read; chat platforms must be connected before recovery posts anything.
  if (shellMode) await core.start();
  try {
    if (http) {
      // Listening before the adapters start: /healthz says 503 while they connect.
      const port = await http.start(config.port, httpHost);
      log.info({ host: httpHost ?? 'every interface', port }, 'http: listening on PORT');
      if (dashboard) log.info({ port }, 'dashboard: serving /dashboard');
    }
    for (const a of adapters) await a.start();
  } catch (err) {
    // Said once, in one line; the adapters leave reporting a failed start to this place.
    const failure = startFailure(err, config.port);
    process.stderr.write(`${failure.line}\n`);
    await shutdown(failure.exitCode);
    return;
  }
  if (!shellMode) await core.start();
  // MCP servers had the whole start to connect; a slow one gets a few seconds more, then joins later.
  await core.extensions.mcp?.settled(5000);
  ready = true;
  log.info({ adapters: adapters.map((a) => a.port.platform), model: config.model.name }, 'ready');
  void dashboard?.warm();
  // Without a key for the default server the start warning already said so; a probe would only repeat it.
  if (!config.model.apiKey) return;
  void probeModel({ baseURL: config.model.baseURL, apiKey: config.model.apiKey, model: config.model.name }).then((r) => {
    const warning = probeWarning(r, { baseURL: config.model.baseURL, apiKey: config.model.apiKey, model: config.model.name });
    if (warning) log.warn(warning);
  });
}

/** `npm run eval` / `npm run replay`: the eval harness gets the built-in tools from here, like the bot. */
async function runToolCommand(command: 'eval' | 'replay', argv: string[]): Promise<void> {
  const { runCli } = await import('./basics/cli/parse-cli.js');
  const cli = command === 'eval' ? await import('./operations/eval/eval-cli.js') : await import('./operations/eval/replay-cli.js');
  runCli(argv, (args, io) => cli.main(args, io, { tools: builtinTools, createCore }), command === 'eval' ? 'The eval harness' : 'Replay');
}

const command = process.argv[2];
if (command === 'eval' || command === 'replay') void runToolCommand(command, process.argv.slice(3));
else {
  main().catch((err: Error) => {
    process.stderr.write(`hermes failed to start: ${err.message}\n`);
    process.exit(err instanceof StartupRefusal ? 2 : 1);
  });
}
