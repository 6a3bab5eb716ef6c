import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { z } from 'zod';
import { createCore, type Core } from '../src/app/app.js';
import { loadConfig } from '../src/settings/load-config.js';
import type { Config } from '../src/settings/config.js';
import { systemClock } from '../src/basics/clock.js';
import { defineTool, type AnyTool } from '../src/capabilities/toolkit/tool-api.js';
import type { NetClient } from '../src/capabilities/net/net-client.js';
import type { Conversation, Speaker } from '../src/basics/types.js';
import { createSqliteStore } from '../src/state/store/sqlite-store.js';
import { createCachedStore } from '../src/state/store/cached-store.js';
import { createSessionStore } from '../src/state/sessions/session-store.js';
import { openSqliteDatabase } from '../src/state/store/database.js';
import { createApprovalStore } from '../src/state/approvals/approval-store.js';
import { createFactStore } from '../src/state/memory/fact-store.js';
import { createTokenCounter } from '../src/runtime/context/token-counter.js';
import { createOpenAIProvider } from '../src/runtime/provider/openai-provider.js';
import { ToolRegistry } from '../src/capabilities/toolkit/registry.js';
import { ToolExecutor } from '../src/capabilities/toolkit/executor.js';
import { createTracer } from '../src/runtime/trace/tracer.js';
import { newTurnState, runSteps, type TurnDeps } from '../src/agent/turn-runner.js';
import { waitingPort } from './waiting-port.js';
import { FINAL_ANSWER, LOOKUP_DESCRIPTION, lookupValue, TURN_PROMPT } from './step-script.js';

/** A runner does one whole scripted turn per call and throws if the turn did not end as scripted. */
export interface TurnRunner {
  name: string;
  runTurn(): Promise<void>;
  close(): Promise<void>;
}

export const lookupTool: AnyTool = defineTool({
  name: 'lookup',
  description: LOOKUP_DESCRIPTION,
  input: z.object({ key: z.string() }),
  run: async ({ key }) => lookupValue(key),
});

const TURN_TIMEOUT_MS = 30_000;
const noNetwork: NetClient = { request: () => Promise.reject(new Error('no network in the bench')), check: () => Promise.reject(new Error('no network in the bench')) };

export async function benchConfig(modelUrl: string, env: Record<string, string> = {}): Promise<{ config: Config; dataDir: string }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-bench-'));
  const result = loadConfig({ OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: 'bench-key', HERMES_MODEL: 'gpt-4o-mini', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir, ...env }, dataDir);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return { config: result.config, dataDir };
}

const speaker = (i: number): Speaker => ({ platform: 'slack', workspaceId: 'TBENCH', userId: `U${i % 50}`, displayName: `user${i % 50}` });
// A fresh DM per turn: every framework starts each scripted turn with an empty conversation.
const dm = (i: number): Conversation => ({ platform: 'slack', workspaceId: 'TBENCH', channelId: `D${i}`, isDm: true });

/** The full production path: gateway (dedupe, queue, sessions on SQLite, traces) → agent loop → port. */
export async function hermesGatewayRunner(modelUrl: string, env: Record<string, string> = {}): Promise<TurnRunner> {
  const { config, dataDir } = await benchConfig(modelUrl, { HERMES_MAX_CONCURRENT_TURNS: '1000', ...env });
  const core: Core = await createCore({ config, log: pino({ level: 'silent' }), tools: [lookupTool], reminders: false });
  const { port, wait } = waitingPort();
  core.gateway.registerPort(port);
  await core.start();
  let n = 0;
  return {
    name: 'hermes-agent (gateway)',
    async runTurn() {
      const i = ++n;
      const conversation = dm(i);
      const answer = wait(conversation.channelId);
      const r = await core.gateway.handleMessage({ id: `m${i}`, conversation, speaker: speaker(i), text: TURN_PROMPT, mentioned: true });
      if (r !== 'queued') throw new Error(`hermes gateway did not queue the message: ${r}`);
      const text = await answer;
      if (!text.includes(FINAL_ANSWER)) throw new Error(`hermes answered something else: ${text.slice(0, 200)}`);
    },
    async close() {
      await core.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The agent loop alone (runSteps with the same stores and tracer), without gateway or port. */
export async function hermesLoopRunner(modelUrl: string): Promise<TurnRunner> {
  const { config, dataDir } = await benchConfig(modelUrl);
  const log = pino({ level: 'silent' });
  const clock = systemClock;
  // The same read cache production puts in front of SQLite (src/app/app.ts).
  const store = createCachedStore(await createSqliteStore({ file: path.join(dataDir, 'hermes.sqlite'), log }));
  const database = await openSqliteDatabase(path.join(dataDir, 'hermes.sqlite'), log);
  const sessions = createSessionStore(database, clock);
  const facts = createFactStore(store, clock);
  const registry = new ToolRegistry(config.tools);
  registry.register(lookupTool);
  const tracer = createTracer({ dir: path.join(dataDir, 'traces'), log, redact: (v) => JSON.stringify(v) });
  const deps: TurnDeps = {
    provider: createOpenAIProvider({ ...config.model, model: config.model.name, log }),
    registry,
    executor: new ToolExecutor({ registry, defaultTimeoutMs: config.limits.toolTimeoutMs, clock }),
    sessions,
    approvals: createApprovalStore(database, clock),
    facts,
    counter: createTokenCounter(config.model.name),
    tracer,
    clock,
    log,
    limits: { maxSteps: config.limits.maxSteps, contextTokens: config.limits.contextTokens, approvalTtlMs: config.limits.approvalTtlMs, factTokens: 1600 },
    timezone: config.timezone,
    toolContext: (state, signal, toolName) => ({
      signal, clock, speaker: state.speaker, isAdmin: false, conversation: state.conversation,
      facts: facts.forUser(state.speaker),
      reminders: { create: () => Promise.reject(new Error('no reminders in the bench')), list: async () => [], cancel: async () => false },
      net: noNetwork,
      settings: {}, defaults: { timezone: config.timezone }, log: log.child({ tool: toolName }),
    }),
  };
  let n = 0;
  return {
    name: 'hermes-agent (agent loop only)',
    async runTurn() {
      const i = ++n;
      const conversation = dm(i);
      const session = await sessions.current(conversation);
      await sessions.append(session.id, [{ role: 'user', content: TURN_PROMPT }]);
      const state = newTurnState({ sessionId: session.id, conversation, speaker: speaker(i), isAdmin: false }, clock.now());
      const end = await runSteps(deps, state, AbortSignal.timeout(TURN_TIMEOUT_MS));
      if (end.kind !== 'answered' || !end.text.includes(FINAL_ANSWER)) throw new Error(`hermes loop ended with ${end.kind}`);
    },
    async close() {
      await tracer.close();
      await database.close();
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
