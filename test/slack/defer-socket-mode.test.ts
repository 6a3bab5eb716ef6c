import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { deferSocketModeClient } from '../../adapters/slack/defer-socket-mode.js';
import type { SlackHarness } from './slack-harness.js';

// Bolt must not be loaded before the stand-in goes in: the harness (which imports Bolt) is
// imported only after it, below. Each test file runs in its own process.
const require = createRequire(import.meta.url);
// The package's files as loaded; its index.js entry is the stand-in until the real module loads.
const socketModeFiles = () => Object.keys(require.cache).filter((f) => /[\\/]@slack[\\/]socket-mode[\\/]dist[\\/]/.test(f) && !/[\\/]index\.js$/.test(f));

let h: SlackHarness | undefined;
afterAll(async () => {
  await h?.close();
});

describe('deferSocketModeClient', () => {
  it('keeps @slack/socket-mode unloaded through Bolt, loads it on first use, and Socket Mode still connects, acks and answers', async () => {
    expect(deferSocketModeClient()).toBe(true);
    const bolt = await import('@slack/bolt');
    expect(typeof bolt.App).toBe('function');
    // Bolt's App and its Socket Mode receiver are loaded; the client package is not.
    expect(Object.keys(require.cache).some((f) => f.includes('SocketModeReceiver'))).toBe(true);
    expect(socketModeFiles()).toEqual([]);

    const { startSlackHarness } = await import('./slack-harness.js');
    h = await startSlackHarness({ socketMode: true });
    expect(socketModeFiles().length).toBeGreaterThan(1);
    await h.slack.waitFor('the socket', () => h!.slack.socketCount() === 1);
    h.ai.enqueue({ text: 'over the socket' });
    await h.slack.sendSocketEvent({ type: 'message', channel_type: 'im', user: 'U1', text: 'hi', ts: h.slack.nextTs(), channel: 'D1' });
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    expect(h.slack.posts()[0]).toMatchObject({ channel: 'D1', text: 'over the socket' });
    // Loaded for real now: a second call leaves the cache alone.
    expect(deferSocketModeClient()).toBe(false);
  });
});
