import { afterEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createDiscordAdapter } from '../../adapters/discord/discord-adapter.js';
import { createLogger } from '../../src/log.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { GatewayApi, OutboundPort } from '../../src/gateway/ports.js';
import type { InboundMessage } from '../../src/types.js';
import { DEFAULT_USER, startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { FAST_TIMING, startBot, type Bot } from './discord-harness.js';

/** The gateway connection: refused intents, bad tokens, and a zombie connection that resumes. */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A gateway stand-in that records what the adapter hands over; enough for connection tests. */
function recordingGateway(): GatewayApi & { messages: InboundMessage[]; ports: OutboundPort[] } {
  const messages: InboundMessage[] = [];
  const ports: OutboundPort[] = [];
  return {
    messages,
    ports,
    handleMessage: async (m) => {
      messages.push(m);
      return 'queued';
    },
    handleCommand: async () => ({ kind: 'private', text: 'ok' }),
    decideApproval: async () => ({ kind: 'unknown', text: 'unknown' }),
    registerPort: (p) => void ports.push(p),
  };
}

function captureLog(): { log: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('info', sink), lines };
}

async function fake(opts: { heartbeatIntervalMs?: number; token?: string } = {}): Promise<FakeDiscord> {
  const d = await startFakeDiscord(opts);
  cleanups.push(() => d.close());
  return d;
}

describe('discord connection', () => {
  it('reports a refused Message Content intent (4014) with the exact fix, and start() rejects with it', async () => {
    const discord = await fake();
    discord.gateway.refuseMessageContent = true;
    const { log, lines } = captureLog();
    const gateway = recordingGateway();
    const adapter = await createDiscordAdapter({ config: { token: 't', apiUrl: discord.apiUrl }, gateway, store: createMemoryStore(), log, timing: FAST_TIMING });
    cleanups.push(() => adapter.stop());
    const started = Date.now();
    await expect(adapter.start()).rejects.toThrow(/Message Content Intent/);
    expect(Date.now() - started).toBeLessThan(5000);
    const line = lines.find((l) => l.level === 50 && String(l.msg).includes('4014'));
    expect(line?.msg).toMatch(/developers\/applications.*Bot.*Privileged Gateway Intents.*Message Content Intent/);
    expect(gateway.ports).toHaveLength(1);
    // The token never reaches the log.
    expect(JSON.stringify(lines)).not.toContain('"t"');
  });

  it('reports a rejected token clearly', async () => {
    const discord = await fake({ token: 'the-real-token' });
    const { log, lines } = captureLog();
    const adapter = await createDiscordAdapter({ config: { token: 'a-wrong-token', apiUrl: discord.apiUrl }, gateway: recordingGateway(), store: createMemoryStore(), log, timing: FAST_TIMING });
    cleanups.push(() => adapter.stop());
    await expect(adapter.start()).rejects.toThrow(/rejected DISCORD_TOKEN.*Reset Token/);
    expect(JSON.stringify(lines)).not.toContain('a-wrong-token');
  });

  it('gives up with a clear message when Discord is unreachable', async () => {
    const { log } = captureLog();
    const adapter = await createDiscordAdapter({ config: { token: 't', apiUrl: 'http://127.0.0.1:9/api' }, gateway: recordingGateway(), store: createMemoryStore(), log, timing: { ...FAST_TIMING, restTimeoutMs: 500 } });
    cleanups.push(() => adapter.stop());
    await expect(adapter.start()).rejects.toThrow(/DISCORD_API_URL|did not become ready/);
  });

  it('resumes after missed heartbeat ACKs and keeps answering', async () => {
    const discord = await fake({ heartbeatIntervalMs: 250 });
    const bot: Bot = await startBot({ discord });
    cleanups.push(() => bot.close());
    discord.gateway.ackHeartbeats = false;
    const deadline = Date.now() + 15_000;
    while (discord.gateway.resumes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(discord.gateway.resumes.length).toBeGreaterThanOrEqual(1);
    discord.gateway.ackHeartbeats = true;
    expect(discord.gateway.identifies).toHaveLength(1);

    bot.openai.enqueue({ text: 'still here' });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'you ok?', mentionBot: true });
    const reply = await discord.waitForCall((c) => c.method === 'POST' && (c.body as { content?: string } | null)?.content === 'still here', 15_000);
    expect((reply.body as { message_reference?: { message_id: string } }).message_reference?.message_id).toBe(id);
    await bot.waitForLog((l) => l.msg === 'discord: gateway session resumed');
  });
});
