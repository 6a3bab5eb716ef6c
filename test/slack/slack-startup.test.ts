import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../../adapters/slack/slack-adapter.js';
import { SlackStartupError } from '../../adapters/slack/startup-check.js';
import type { GatewayApi, OutboundPort } from '../../src/basics/ports.js';
import { openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createBotHttp } from '../../src/app/bot-http.js';
import { FULL_SCOPES, startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';

let slack: FakeSlack | undefined;
const opened: Array<{ database: OpenedDatabase; dir: string }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    await o.database.close();
    await rm(o.dir, { recursive: true, force: true });
  }
  await slack?.close();
  slack = undefined;
});

/** Only records the registered port: startup never reaches the gateway otherwise. */
function recordingGateway(ports: OutboundPort[]): GatewayApi {
  const never = () => Promise.reject(new Error('not used at startup'));
  return { handleMessage: never, handleCommand: never, decideApproval: never, registerPort: (p) => void ports.push(p) };
}

function logLines() {
  const lines: Array<{ level: number; msg: string }> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) });
  return { log, lines };
}

async function tables(): Promise<OpenedDatabase> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-slack-startup-'));
  const database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  opened.push({ database, dir });
  return database;
}

async function create(fake: FakeSlack, token = fake.botToken) {
  const { log, lines } = logLines();
  const ports: OutboundPort[] = [];
  const http = createBotHttp({ log, isReady: () => false });
  const adapter = await createSlackAdapter({
    config: { botToken: token, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl },
    http,
    gateway: recordingGateway(ports),
    database: await tables(),
    // Start-up only: nothing is received, so the journal is never asked for pending bodies.
    receipts: { add: async () => false, done: async () => undefined, doneAlready: async () => undefined, drop: async () => undefined, pending: async () => [], sweep: async () => 0 },
    log,
    retries: 0,
  });
  return { adapter, http, ports, lines };
}

describe('slack startup', () => {
  it('checks the token with auth.test, registers its port and warns about degraded scopes', async () => {
    slack = await startFakeSlack({ scopes: FULL_SCOPES.filter((s) => s !== 'reactions:write') });
    const { adapter, http, ports, lines } = await create(slack);
    expect(slack.callsTo('auth.test')).toHaveLength(1);
    expect(ports).toHaveLength(1);
    expect(ports[0]!.platform).toBe('slack');
    const warning = lines.find((l) => l.level === 40 && l.msg.includes('reactions:write'));
    expect(warning?.msg).toMatch(/OAuth & Permissions.*reinstall/);
    const base = `http://127.0.0.1:${await http.start(0, '127.0.0.1')}`;
    try {
      // Before start the bot's server has no Slack route; start adds it, stop takes it away again.
      expect((await fetch(`${base}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(404);
      await adapter.start();
      expect((await fetch(`${base}/healthz`)).status).toBe(503);
      expect((await fetch(`${base}/slack/events`, { method: 'POST', body: '{}', headers: { 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)) } })).status).toBe(401);
      expect((await fetch(`${base}/slack/events`)).status).toBe(405);
      await adapter.stop();
      expect((await fetch(`${base}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(404);
    } finally {
      await http.stop();
    }
    expect(slack.callsTo('auth.test')).toHaveLength(1);
  });

  it('refuses to start without chat:write, naming the exact fix', async () => {
    slack = await startFakeSlack({ scopes: FULL_SCOPES.filter((s) => s !== 'chat:write') });
    const err = await create(slack).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SlackStartupError);
    expect((err as Error).message).toMatch(/chat:write.*OAuth & Permissions.*reinstall the app/);
  });

  it('refuses a rejected token with a clear message', async () => {
    slack = await startFakeSlack();
    const err = await create(slack, 'xoxb-wrong').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SlackStartupError);
    expect((err as Error).message).toMatch(/SLACK_BOT_TOKEN was rejected by Slack \(invalid_auth\)/);
  });
});
