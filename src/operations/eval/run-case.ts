import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { systemClock, type Clock } from '../../basics/clock.js';
import { loadConfig } from '../../settings/load-config.js';
import type { Config } from '../../settings/config.js';
import type { Store } from '../../state/store/store.js';
import type { Gateway } from '../../gateway/gateway.js';
import { createFactStore } from '../../state/memory/fact-store.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import { withWebOrigin, type EvalCase } from './case-schema.js';
import { runChecks, toolAccuracy, type CaseObservation, type CheckResult } from './checks.js';
import { createEvalPort, type EvalPort } from './eval-port.js';
import { startFixtureWeb } from './fixture-web.js';
import { parsedArgs, readTraceEvents } from './trace-reader.js';
import type { AnyTool } from '../../capabilities/toolkit/tool-api.js';

/** When a case names no clock: a fixed instant keeps answers comparable between runs. */
export const DEFAULT_CASE_CLOCK = '2026-03-14T09:26:53Z';
const DEFAULT_CASE_TIMEOUT_MS = 300_000;
/** Approval rounds per message; a model that keeps asking is cut off here. */
const MAX_APPROVAL_ROUNDS = 10;

export interface CaseResult {
  name: string;
  tags: string[];
  passed: boolean;
  checks: CheckResult[];
  steps: number;
  toolCalls: Array<{ name: string; ok: boolean }>;
  /** Expected calls matched / calls made. */
  toolAccuracy: number;
  tokensIn: number;
  tokensOut: number;
  latencyMs: number;
  finalAnswer: string;
  /** Set when the case could not finish (timeout, core failure): it counts as failed. */
  error?: string;
}

/** The parts of a running core a case drives. */
export interface EvalCore {
  gateway: Pick<Gateway, 'registerPort' | 'handleMessage' | 'idle' | 'decideApproval'>;
  store: Store;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Builds the core a case runs on: the composition root passes app.ts's createCore. */
export type CreateEvalCore = (opts: { config: Config; log: Logger; clock: Clock; tools: AnyTool[]; reminders: false }) => Promise<EvalCore>;

export interface RunCaseOptions {
  createCore: CreateEvalCore;
  /** Model settings come from here (OPENAI_BASE_URL, HERMES_MODEL, …); platform variables are ignored. */
  env: Record<string, string | undefined>;
  /** The tools a case's core offers, a fresh set per case (the composition root passes the built-ins). */
  tools: () => AnyTool[];
  log?: Logger;
  timeoutMs?: number;
  /** Keep the case's data folder (traces, SQLite) for inspection; its path goes to onDataDir. */
  keepData?: boolean;
  onDataDir?(dir: string): void;
  /** Called with the case as it will run ({{web}} filled in), before its core starts. */
  onCaseReady?(c: EvalCase): void | Promise<void>;
}

/** A harness problem (bad settings, cannot start the core): the run stops, unlike a failed case. */
export class EvalHarnessError extends Error {
  override name = 'EvalHarnessError';
}

const DROPPED_ENV = /^(SLACK_|DISCORD_|HERMES_DATA_DIR$|HERMES_STORE_URL$|PORT$)/;

function fixedClock(iso: string): Clock {
  const at = Date.parse(iso);
  return { now: () => at, setTimer: systemClock.setTimer };
}

function speakerOf(from: string | undefined): Speaker {
  return { platform: 'slack', workspaceId: 'T_EVAL', userId: from ?? 'U_EVAL', displayName: from ?? 'eval-user' };
}

/** Runs one case through a fresh core (own data folder, own fixture web) and checks it. */
export async function runCase(input: EvalCase, opts: RunCaseOptions): Promise<CaseResult> {
  const web = await startFixtureWeb({ pages: input.environment.pages, sink: input.environment.sink });
  const c = withWebOrigin(input, web.origin);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `hermes-eval-${c.name.slice(0, 40)}-`));
  let core: EvalCore | undefined;
  try {
    await opts.onCaseReady?.(c);
    const env: Record<string, string | undefined> = Object.fromEntries(Object.entries(opts.env).filter(([k]) => !DROPPED_ENV.test(k)));
    env.HERMES_DATA_DIR = dataDir;
    env.HERMES_NET_ALLOW = [env.HERMES_NET_ALLOW, web.hostPort].filter(Boolean).join(',');
    if (c.environment.timezone) env.HERMES_TIMEZONE = c.environment.timezone;
    const loaded = loadConfig(env, dataDir);
    if (!loaded.ok) throw new EvalHarnessError(`settings are not valid:\n${loaded.errors.join('\n')}`);
    const clock = fixedClock(c.environment.clock ?? DEFAULT_CASE_CLOCK);
    const log = opts.log ?? pino({ level: 'silent' });
    try {
      core = await opts.createCore({ config: loaded.config, log, clock, tools: opts.tools(), reminders: false });
    } catch (err) {
      throw new EvalHarnessError(`could not start the agent core: ${(err as Error).message}`);
    }
    const port = createEvalPort('slack');
    core.gateway.registerPort(port);
    await core.start();

    const started = performance.now();
    const progress = { finalFrom: 0 };
    const drive = converse(core, port, c, progress);
    drive.catch(() => undefined); // a timed-out case keeps running until core.close() aborts it
    let error: string | undefined;
    const timeoutMs = opts.timeoutMs ?? DEFAULT_CASE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        drive,
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the case did not finish within ${timeoutMs} ms`)), timeoutMs))),
      ]);
    } catch (err) {
      error = (err as Error).message;
    } finally {
      clearTimeout(timer);
    }
    const latencyMs = Math.round(performance.now() - started);
    const firstSpeaker = speakerOf(typeof c.messages[0] === 'string' ? undefined : c.messages[0]?.from);
    const facts = (await createFactStore(core.store, clock).list(firstSpeaker)).map((f) => f.text);
    await core.close();
    core = undefined;

    const events = await readTraceEvents(path.join(dataDir, 'traces'));
    const obs: CaseObservation = {
      answers: [...port.texts],
      finalAnswer: port.texts.slice(progress.finalFrom).at(-1) ?? '',
      toolCalls: events.flatMap((e) => (e.type === 'tool_call' ? [{ name: e.name, args: parsedArgs(e.args), ok: e.ok }] : [])),
      approvals: events.flatMap((e) => (e.type === 'approval' && e.status !== 'pending' ? [{ tool: e.tool, status: e.status }] : [])),
      sink: [...web.sink],
      facts,
      steps: events.filter((e) => e.type === 'model_call').length,
    };
    const checks = runChecks(c.expect, obs);
    // A model that could not answer explains every other failure; name it first.
    const modelError = events.find((e) => e.type === 'model_call' && e.error);
    if (modelError?.type === 'model_call') checks.unshift({ check: 'model', ok: false, detail: `a model call failed: ${modelError.error}` });
    if (error) checks.unshift({ check: 'finished', ok: false, detail: error });
    let tokensIn = 0;
    let tokensOut = 0;
    for (const e of events) {
      if (e.type !== 'model_call' || !e.usage) continue;
      tokensIn += e.usage.promptTokens;
      tokensOut += e.usage.completionTokens;
    }
    return {
      name: c.name,
      tags: c.tags,
      passed: checks.every((k) => k.ok),
      checks,
      steps: obs.steps,
      toolCalls: obs.toolCalls.map((t) => ({ name: t.name, ok: t.ok })),
      toolAccuracy: toolAccuracy(c.expect.tools_called, obs.toolCalls, c.expect.tools_in_order ?? false),
      tokensIn,
      tokensOut,
      latencyMs,
      finalAnswer: obs.finalAnswer,
      ...(error ? { error } : {}),
    };
  } finally {
    await core?.close().catch(() => undefined);
    await web.close();
    if (opts.keepData) opts.onDataDir?.(dataDir);
    else await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Sends the case's messages one at a time, each after the previous turn settled, deciding
 * approval prompts as the case says. `progress.finalFrom` is the index of the first text that
 * answers the latest message.
 */
async function converse(core: EvalCore, port: EvalPort, c: EvalCase, progress: { finalFrom: number }): Promise<void> {
  const conversation: Conversation = c.conversation === 'dm'
    ? { platform: 'slack', workspaceId: 'T_EVAL', channelId: 'D_EVAL', isDm: true }
    : { platform: 'slack', workspaceId: 'T_EVAL', channelId: 'C_EVAL', isDm: false };
  const decisions = [...c.approvals];
  let decided = 0;
  for (const [i, m] of c.messages.entries()) {
    const text = typeof m === 'string' ? m : m.text;
    const speaker = speakerOf(typeof m === 'string' ? undefined : m.from);
    progress.finalFrom = port.texts.length;
    const verdict = await core.gateway.handleMessage({ id: `eval-${c.name}-${i}`, conversation, speaker, text, mentioned: true });
    if (verdict !== 'queued') throw new Error(`message ${i + 1} was ${verdict} by the gateway`);
    for (let round = 0; round < MAX_APPROVAL_ROUNDS; round++) {
      await core.gateway.idle();
      const view = port.approvals[decided];
      if (!view) break;
      decided++;
      await core.gateway.decideApproval({ approvalId: view.id, decision: decisions.shift() ?? 'deny', decidedBy: view.requester });
    }
    await core.gateway.idle();
  }
}
