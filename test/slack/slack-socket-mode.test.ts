import { afterEach, describe, expect, it } from 'vitest';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('slack Socket Mode', () => {
  it('connects through apps.connections.open at SLACK_API_URL, acks events and answers, with no HTTP route', async () => {
    h = await startSlackHarness({ socketMode: true });
    // The adapter adds no route to the bot's HTTP server (main.ts runs none for Socket Mode alone).
    expect((await fetch(h.target, { method: 'POST', body: '{}' })).status).toBe(404);
    expect(h.slack.callsTo('apps.connections.open')).toHaveLength(1);
    await h.slack.waitFor('the socket', () => h!.slack.socketCount() === 1);
    h.ai.enqueue({ text: 'over the socket' });
    await h.slack.sendSocketEvent({ type: 'message', channel_type: 'im', user: 'U1', text: 'hi', ts: h.slack.nextTs(), channel: 'D1' });
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    expect(h.slack.posts()[0]).toMatchObject({ channel: 'D1', text: 'over the socket' });
  });
});
