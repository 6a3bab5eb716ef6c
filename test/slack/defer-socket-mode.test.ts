import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { deferOAuth, deferSocketModeClient } from '../../adapters/slack/defer-socket-mode.js';
import type { SlackHarness } from './slack-harness.js';

// Bolt must not be loaded before the stand-ins go in: the harness (which imports the adapter, and
// with it Bolt) is imported only after them, below. This file runs in a process of its own
// (project unit-own-process in vitest.config.ts), so no other file has loaded Bolt, its Socket
// Mode client or @slack/oauth before.
const require = createRequire(import.meta.url);
// A package's files as loaded; its index.js entry is the stand-in until the real module loads.
const filesOf = (pkg: string) => Object.keys(require.cache).filter((f) => f.includes(`${pkg}/`) && !/[\\/]index\.js$/.test(f));

let h: SlackHarness | undefined;
afterAll(async () => {
  await h?.close();
});

describe('deferSocketModeClient and deferOAuth', () => {
  it('keep @slack/socket-mode and @slack/oauth unloaded through Bolt (and express never loads); Socket Mode loads its client on first use and still connects, acks and answers', async () => {
    expect(deferSocketModeClient()).toBe(true);
    expect(deferOAuth()).toBe(true);
    const bolt = await import('../../adapters/slack/bolt.js');
    expect(typeof bolt.App).toBe('function');
    // Bolt's App and both its receivers are loaded; the packages behind the stand-ins are not,
    // nor express, which only Bolt's index (through ExpressReceiver) would load.
    expect(Object.keys(require.cache).some((f) => f.includes('SocketModeReceiver'))).toBe(true);
    expect(Object.keys(require.cache).some((f) => f.includes('HTTPReceiver'))).toBe(true);
    expect(filesOf('@slack/socket-mode/dist')).toEqual([]);
    expect(filesOf('@slack/oauth/dist')).toEqual([]);
    expect(filesOf('node_modules/express')).toEqual([]);
    expect(filesOf('node_modules/jsonwebtoken')).toEqual([]);

    const { startSlackHarness } = await import('./slack-harness.js');
    h = await startSlackHarness({ socketMode: true });
    expect(filesOf('@slack/socket-mode/dist').length).toBeGreaterThan(1);
    await h.slack.waitFor('the socket', () => h!.slack.socketCount() === 1);
    h.ai.enqueue({ text: 'over the socket' });
    await h.slack.sendSocketEvent({ type: 'message', channel_type: 'im', user: 'U1', text: 'hi', ts: h.slack.nextTs(), channel: 'D1' });
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    expect(h.slack.posts()[0]).toMatchObject({ channel: 'D1', text: 'over the socket' });
    // No installer was asked for: OAuth is still the stand-in, and answers when read.
    expect(filesOf('@slack/oauth/dist')).toEqual([]);
    expect(typeof (require(require.resolve('@slack/oauth', { paths: [require.resolve('@slack/bolt')] })) as { InstallProvider: unknown }).InstallProvider).toBe('function');
    expect(filesOf('@slack/oauth/dist').length).toBeGreaterThan(1);
    // Loaded for real now: a second call leaves the cache alone.
    expect(deferSocketModeClient()).toBe(false);
    expect(deferOAuth()).toBe(false);
  });
});
