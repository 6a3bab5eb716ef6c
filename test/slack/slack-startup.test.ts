import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../../adapters/slack/slack-adapter.js';
import { SlackStartupError } from '../../adapters/slack/startup-check.js';
import type { GatewayApi, OutboundPort } from '../../src/basics/ports.js';
import { createMemoryStore } from '../../src/state/store/memory-store.js';
import { FULL_SCOPES, startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';

let slack: FakeSlack | undefined;
afterEach(async () => {
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

async function create(fake: FakeSlack, token = fake.botToken) {
  const { log, lines } = logLines();
  const ports: OutboundPort[] = [];
  const adapter = await createSlackAdapter({
    config: { botToken: token, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl },
    httpPort: 0,
    gateway: recordingGateway(ports),
    store: createMemoryStore(),
    // Start-up only: nothing is received, so the journal is never asked for pending bodies.
    receipts: { add: async () => undefined, done: async () => undefined, pending: async () => [] },
    log,
    isReady: () => false,
    retries: 0,
  });
  return { adapter, ports, lines };
}

describe('slack startup', () => {
  it('checks the token with auth.test, registers its port and warns about degraded scopes', async () => {
    slack = await startFakeSlack({ scopes: FULL_SCOPES.filter((s) => s !== 'reactions:write') });
    const { adapter, ports, lines } = await create(slack);
    expect(slack.callsTo('auth.test')).toHaveLength(1);
    expect(ports).toHaveLength(1);
    expect(ports[0]!.platform).toBe('slack');
    const warning = lines.find((l) => l.level === 40 && l.msg.includes('reactions:write'));
    expect(warning?.msg).toMatch(/OAuth & Permissions.*reinstall/);
    await adapter.start();
    expect((await fetch(`http://127.0.0.1:${adapter.listeningPort()}/healthz`)).status).toBe(503);
    await adapter.stop();
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
