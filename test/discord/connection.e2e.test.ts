import { afterEach, describe, expect, it } from 'vitest';
import { createDiscordAdapter } from '../../adapters/discord/discord-adapter.js';
import { captureLog, recordingGateway } from './recording-gateway.js';
import { DEFAULT_USER, startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { FAST_TIMING, startBot, type Bot } from './discord-harness.js';

/** The connection (refused intents, bad tokens, a zombie connection that resumes) and interaction token expiry, against a recording gateway. */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

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
    const adapter = await createDiscordAdapter({ config: { token: 't', apiUrl: discord.apiUrl }, gateway, log, timing: FAST_TIMING });
    cleanups.push(() => adapter.stop());
    const started = Date.now();
    await expect(adapter.start()).rejects.toThrow(/4014.*developers\/applications.*Bot.*Privileged Gateway Intents.*Message Content Intent/);
    expect(Date.now() - started).toBeLessThan(5000);
    // Reported once, by whoever started the connection (main prints the rejection), not also here.
    expect(lines.filter((l) => String(l.msg).includes('4014'))).toEqual([]);
    expect(gateway.ports).toHaveLength(1);
    // The token never reaches the log.
    expect(JSON.stringify(lines)).not.toContain('"t"');
  });

  it('reports a rejected token clearly', async () => {
    const discord = await fake({ token: 'the-real-token' });
    const { log, lines } = captureLog();
    const adapter = await createDiscordAdapter({ config: { token: 'a-wrong-token', apiUrl: discord.apiUrl }, gateway: recordingGateway(), log, timing: FAST_TIMING });
    cleanups.push(() => adapter.stop());
    await expect(adapter.start()).rejects.toThrow(/rejected DISCORD_TOKEN.*Reset Token/);
    expect(JSON.stringify(lines)).not.toContain('a-wrong-token');
  });

  it('gives up with a clear message when Discord is unreachable', async () => {
    const { log } = captureLog();
    const adapter = await createDiscordAdapter({ config: { token: 't', apiUrl: 'http://127.0.0.1:9/api' }, gateway: recordingGateway(), log, timing: { ...FAST_TIMING, restTimeoutMs: 500 } });
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

  it('sends a private answer that comes after the 15-minute interaction token to the user by DM', async () => {
    const discord = await fake();
    const { log } = captureLog();
    const gateway = recordingGateway({ kind: 'private', text: 'You have 2 facts stored.' });
    // The adapter's clock says the interaction is 16 minutes old by the time the answer is ready.
    const clock = { now: () => Date.now() + 16 * 60_000, setTimer: () => () => undefined };
    const adapter = await createDiscordAdapter({ config: { token: 't', apiUrl: discord.apiUrl }, gateway, log, clock, timing: FAST_TIMING });
    cleanups.push(() => adapter.stop());
    await adapter.start();
    const { token } = discord.runSlashCommand({ user: DEFAULT_USER, text: 'memory' });
    await discord.waitForCall((c) => c.method === 'POST' && c.path === '/users/@me/channels');
    const dm = await discord.waitForCall((c) => c.method === 'POST' && /^\/channels\/\d+\/messages$/.test(c.path));
    expect((dm.body as { content: string }).content).toBe('You have 2 facts stored.');
    expect(dm.path).not.toBe(`/channels/${discord.channelId}/messages`);
    expect(discord.calls.filter((c) => c.path.includes(`/webhooks/${discord.applicationId}/${token}`))).toEqual([]);
    expect(gateway.commands[0]).toMatchObject({ text: 'memory', speaker: { userId: DEFAULT_USER.id, workspaceId: discord.guildId } });
  });
});
