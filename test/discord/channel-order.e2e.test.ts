import { afterEach, describe, expect, it } from 'vitest';
import { createDiscordAdapter } from '../../adapters/discord/discord-adapter.js';
import type { InboundMessage } from '../../src/basics/types.js';
import { DEFAULT_USER, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { FAST_TIMING } from './discord-harness.js';
import { captureLog, recordingGateway } from './recording-gateway.js';

/**
 * A channel's messages reach the gateway one at a time, in the order Discord sent them: the next
 * one only once the gateway is done with the one before (accepted: its work row committed). Handed
 * over at once, a later message of a thread could be accepted first, claimed and answered before
 * the earlier one was accepted at all: the crash test on two instances under load saw "b1-11 was
 * answered before b1-10". The gateway here is a recording stand-in whose handover of the first
 * message is held open, as a slow accept would be.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const THREAD = '510000000000000001';
const OTHER_THREAD = '510000000000000002';

async function setup(lineWaitMs?: number) {
  const discord = await startFakeDiscord();
  cleanups.push(() => discord.close());
  const { log, lines } = captureLog();
  const gateway = recordingGateway();
  /** Messages whose handover has started, in that order, and the releases of those held open. */
  const started: string[] = [];
  const held = new Map<string, () => void>();
  const holdText = new Set<string>();
  gateway.handleMessage = async (m: InboundMessage) => {
    started.push(m.text);
    if (holdText.has(m.text)) await new Promise<void>((resolve) => held.set(m.text, resolve));
    gateway.messages.push(m);
    return 'queued';
  };
  const adapter = await createDiscordAdapter({ config: { token: 't', apiUrl: discord.apiUrl }, gateway, log, timing: { ...FAST_TIMING, ...(lineWaitMs !== undefined && { lineWaitMs }) } });
  cleanups.push(() => adapter.stop());
  await adapter.start();
  const until = async (check: () => boolean, what: string) => {
    const end = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; started ${JSON.stringify(started)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const send = (threadId: string, content: string) => discord.sendThreadMessage({ author: DEFAULT_USER, content, threadId, mentionBot: true });
  return { gateway, started, held, holdText, until, send, lines };
}

describe('discord: a channel in order', () => {
  it("hands a thread's next message to the gateway only once the one before is accepted; other threads are not held up", async () => {
    const { gateway, started, held, holdText, until, send } = await setup();
    holdText.add('first');
    send(THREAD, 'first');
    await until(() => held.has('first'), 'the first handover');
    send(THREAD, 'second');
    // One gateway connection delivers in order: once a later event was handed over, `second` has
    // arrived too. It waits; the other thread does not.
    send(OTHER_THREAD, 'elsewhere');
    await until(() => gateway.messages.some((m) => m.text === 'elsewhere'), 'the other thread');
    expect(started).toEqual(['first', 'elsewhere']);

    held.get('first')!();
    await until(() => gateway.messages.length === 3, 'all three accepted');
    expect(gateway.messages.map((m) => m.text)).toEqual(['elsewhere', 'first', 'second']);
    expect(started).toEqual(['first', 'elsewhere', 'second']);
  });

  it('goes on after lineWaitMs when the handover before it hangs, and says so', async () => {
    const { gateway, started, held, holdText, until, send, lines } = await setup(300);
    holdText.add('stuck');
    send(THREAD, 'stuck');
    await until(() => held.has('stuck'), 'the first handover');
    send(THREAD, 'next');
    await until(() => gateway.messages.some((m) => m.text === 'next'), 'the next message, after the wait');
    expect(started).toEqual(['stuck', 'next']);
    expect(lines.some((l) => String(l.msg).includes('still being handled') && l.channelId === THREAD)).toBe(true);
    held.get('stuck')!();
    await until(() => gateway.messages.length === 2, 'the stuck one too');
  });
});
