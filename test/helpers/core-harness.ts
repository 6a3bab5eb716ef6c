import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/settings/load-config.js';
import type { Config } from '../../src/settings/config.js';
import { createCore, type Core, type CoreOptions } from '../../src/app/app.js';
import type { ApprovalResolution, ApprovalView, OutboundPort } from '../../src/basics/ports.js';
import type { Conversation, Platform, Speaker } from '../../src/basics/types.js';
import type { AnyTool } from '../../src/capabilities/toolkit/tool-api.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';

/**
 * A real core (SQLite on disk, real OpenAI SDK against the fake server, real tools) with a
 * recording port standing in for a chat platform. Platform adapters have their own e2e tests;
 * these exercise the gateway and agent loop through the same OutboundPort contract.
 */
export type PortEvent =
  | { kind: 'text'; conversation: Conversation; text: string; replyTo?: string; notify?: string }
  | { kind: 'approval'; conversation: Conversation; view: ApprovalView; ref: string }
  | { kind: 'resolved'; conversation: Conversation; ref: string; view: ApprovalView; resolution: ApprovalResolution }
  | { kind: 'working'; conversation: Conversation }
  | { kind: 'stopped'; conversation: Conversation };

export interface RecordingPort extends OutboundPort {
  events: PortEvent[];
  texts(channelId?: string): string[];
  approvals(): Array<Extract<PortEvent, { kind: 'approval' }>>;
  waitFor<T extends PortEvent>(pred: (e: PortEvent) => e is T, timeoutMs?: number): Promise<T>;
  waitForCount(pred: (e: PortEvent) => boolean, n: number, timeoutMs?: number): Promise<PortEvent[]>;
}

const WAIT_MS = 25_000;

export function createRecordingPort(platform: Platform = 'slack'): RecordingPort {
  const events: PortEvent[] = [];
  const listeners = new Set<() => void>();
  const push = (e: PortEvent) => {
    events.push(e);
    for (const l of [...listeners]) l();
  };
  let refs = 0;
  const waitUntil = <R>(check: () => R | undefined, timeoutMs: number, what: string) =>
    new Promise<R>((resolve, reject) => {
      const first = check();
      if (first !== undefined) return resolve(first);
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; events: ${JSON.stringify(events.map((e) => e.kind))}`));
      }, timeoutMs);
      const listener = () => {
        const r = check();
        if (r !== undefined) {
          clearTimeout(timer);
          listeners.delete(listener);
          resolve(r);
        }
      };
      listeners.add(listener);
    });
  return {
    platform,
    events,
    async sendText(conversation, text, opts) {
      push({ kind: 'text', conversation, text, replyTo: opts?.replyTo, notify: opts?.notify });
    },
    async showApproval(conversation, view) {
      const ref = `ref-${++refs}`;
      push({ kind: 'approval', conversation, view, ref });
      return ref;
    },
    async resolveApproval(conversation, ref, view, resolution) {
      push({ kind: 'resolved', conversation, ref, view, resolution });
    },
    async startWorking(conversation) {
      push({ kind: 'working', conversation });
      return async () => push({ kind: 'stopped', conversation });
    },
    mention: (id) => `<@${id}>`,
    texts: (channelId) => events.flatMap((e) => (e.kind === 'text' && (!channelId || e.conversation.channelId === channelId) ? [e.text] : [])),
    approvals: () => events.filter((e): e is Extract<PortEvent, { kind: 'approval' }> => e.kind === 'approval'),
    // A first turn in a worker under load (2 cores shared with the rest of CI) was measured at
    // 4.6-11.3 s; the wait bounds a slow machine, below the 30 s test timeout, not a turn's speed.
    waitFor: (pred, timeoutMs = WAIT_MS) => waitUntil(() => events.find(pred), timeoutMs, 'an event'),
    waitForCount: (pred, n, timeoutMs = WAIT_MS) =>
      waitUntil(() => {
        const found = events.filter(pred);
        return found.length >= n ? found : undefined;
      }, timeoutMs, `${n} events`),
  };
}

export const isText = (e: PortEvent): e is Extract<PortEvent, { kind: 'text' }> => e.kind === 'text';
export const isApproval = (e: PortEvent): e is Extract<PortEvent, { kind: 'approval' }> => e.kind === 'approval';
export const isResolved = (e: PortEvent): e is Extract<PortEvent, { kind: 'resolved' }> => e.kind === 'resolved';

export function conv(channelId: string, extra: Partial<Conversation> = {}): Conversation {
  return { platform: 'slack', workspaceId: 'T1', channelId, isDm: false, ...extra };
}

export function user(userId: string, extra: Partial<Speaker> = {}): Speaker {
  return { platform: 'slack', workspaceId: 'T1', userId, displayName: userId.toLowerCase(), ...extra };
}

export interface Harness {
  fake: FakeOpenAI;
  core: Core;
  port: RecordingPort;
  dataDir: string;
  config: Config;
  /** Closes the core and opens a new one on the same data dir (a restart), optionally with changed settings. */
  restart(env?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

export async function startHarness(opts: { env?: Record<string, string>; tools?: AnyTool[]; extraTools?: AnyTool[]; fake?: FakeOpenAI; core?: Partial<CoreOptions> } = {}): Promise<Harness> {
  const fake = opts.fake ?? (await startFakeOpenAI());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-test-'));
  const configFor = (env: Record<string, string> = {}): Config => {
    const result = loadConfig({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir, HERMES_MODEL: 'gpt-4o-mini', HERMES_PROGRESS_DELAY_MS: '0', HERMES_STREAMING: 'off', ...opts.env, ...env }, dataDir);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    return result.config;
  };
  let config = configFor();
  const log = pino({ level: process.env.TEST_LOG ?? 'silent' });
  const open = async () => {
    // Every trace record a test's turns write is checked against the schema (a mismatch fails the turn).
    const core = await createCore({ config, log, tools: opts.tools, extraTools: opts.extraTools, invalidTraces: 'throw', ...opts.core });
    const port = createRecordingPort();
    core.gateway.registerPort(port);
    await core.start();
    return { core, port };
  };
  const h = { fake, dataDir, config, ...(await open()) } as Harness;
  h.restart = async (env) => {
    await h.core.close();
    if (env) h.config = config = configFor(env);
    Object.assign(h, await open());
  };
  h.close = async () => {
    await h.core.close();
    if (!opts.fake) await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  };
  return h;
}
