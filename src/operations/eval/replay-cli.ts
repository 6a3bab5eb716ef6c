import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../settings/load-config.js';
import { createOpenAIProvider } from '../../runtime/provider/openai-provider.js';
import { toToolSpec } from '../../capabilities/toolkit/json-schema.js';
import type { AnyTool } from '../../capabilities/toolkit/tool-api.js';
import { formatReplay, replaySteps, selectModelCalls } from './replay.js';
import { readTraceEvents } from './trace-reader.js';
import { parseCli, type CliIo } from '../../basics/cli/parse-cli.js';

const USAGE = `Usage: npm run replay -- (--turn ID | --session ID) [options]

Re-sends each recorded model request of a turn (or of every turn of a session) to a model and
shows, step by step, where the tool-call path differs from the recorded one.

Options:
  --turn ID          a turn id (a unique prefix is enough)
  --session ID       every turn of this session, in order
  --traces DIR       trace folder (default $HERMES_DATA_DIR/traces, else ./data/traces)
  --model NAME       model to ask (default HERMES_MODEL)
  --base-url URL     OpenAI-compatible server (default OPENAI_BASE_URL)
  --system-file F    replace the recorded system prompt with the text of F
  --max-steps N      replay at most N model calls (default 50)
  --json             print the steps as JSON
  --help`;

/** `tools`: every tool the recordings may have offered (main.ts passes the built-ins). */
export async function main(argv: string[], io: CliIo, deps: { tools: () => AnyTool[] }): Promise<number> {
  const parsed = parseCli(argv, {
    turn: { type: 'string' },
    session: { type: 'string' },
    traces: { type: 'string' },
    model: { type: 'string' },
    'base-url': { type: 'string' },
    'system-file': { type: 'string' },
    'max-steps': { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean' },
  }, USAGE, io);
  if (parsed.exit !== undefined) return parsed.exit;
  const args = parsed.args;
  const o = args.values;
  const maxSteps = o['max-steps'] === undefined ? 50 : Number(o['max-steps']);
  if (!(Number.isInteger(maxSteps) && maxSteps > 0)) {
    io.err('--max-steps must be a whole number above 0');
    return 2;
  }
  // Platform settings play no part in a replay; an invalid one must not stop it.
  const env = Object.fromEntries(Object.entries(io.env).filter(([k]) => !/^(SLACK_|DISCORD_|PORT$)/.test(k)));
  if (o.model) env.HERMES_MODEL = o.model;
  if (o['base-url']) env.OPENAI_BASE_URL = o['base-url'];
  const loaded = loadConfig(env, io.cwd);
  if (!loaded.ok) {
    for (const e of loaded.errors) io.err(e);
    return 2;
  }
  const config = loaded.config;
  const tracesDir = path.resolve(io.cwd, o.traces ?? path.join(config.dataDir, 'traces'));

  let system: string | undefined;
  if (o['system-file']) {
    try {
      system = await readFile(path.resolve(io.cwd, o['system-file']), 'utf8');
    } catch (err) {
      io.err(`--system-file ${o['system-file']}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      return 2;
    }
  }

  let calls;
  try {
    calls = selectModelCalls(await readTraceEvents(tracesDir), { turnId: o.turn, sessionId: o.session });
  } catch (err) {
    io.err(`${(err as Error).message} (traces read from ${tracesDir})`);
    return 2;
  }

  // Every built-in tool, visible here or not: the replay offers exactly what the recording offered.
  const specs = deps.tools().map((t) => toToolSpec(t));
  const provider = createOpenAIProvider({ ...config.model, model: config.model.name, log: pino({ level: 'silent' }) });
  const steps = await replaySteps(calls, { provider, specs, system, maxSteps });
  if (o.json) io.out(JSON.stringify({ model: config.model.name, steps }, null, 2));
  else {
    const recordedModel = calls[0]?.model ?? 'recorded';
    for (const line of formatReplay(steps, { recorded: recordedModel, replayed: `${config.model.name}${system !== undefined ? ', new system prompt' : ''}` })) io.out(line);
  }
  return 0;
}

