import { afterEach, describe, expect, it } from 'vitest';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const responsesTo = (h: SlackHarness, id: string) => h.slack.responses.filter((r) => r.id === id);

describe('slack /hermes', () => {
  it('help answers privately through response_url and lists every subcommand', async () => {
    h = await startSlackHarness();
    const { status, responseId } = await h.slack.sendCommand(h.target, { text: 'help', userId: 'U1', channelId: 'C1' });
    expect(status).toBe(200);
    await h.slack.waitFor('the help answer', () => responsesTo(h!, responseId).length === 1);
    const body = responsesTo(h, responseId)[0]!.body;
    expect(body.response_type).toBe('ephemeral');
    for (const sub of ['new', 'stop', 'memory', 'forget', 'status', 'help']) expect(String(body.text)).toContain(sub);
    expect(h.slack.posts()).toHaveLength(0);
    expect(h.ai.requests).toHaveLength(0);
  });

  it('a task is acknowledged privately and answered in the channel', async () => {
    h = await startSlackHarness();
    h.ai.enqueue({ text: 'The answer to your task.' });
    const { status, responseId } = await h.slack.sendCommand(h.target, { text: 'summarise the plan', userId: 'U1', channelId: 'C5' });
    expect(status).toBe(200);
    await h.slack.waitFor('the channel answer', () => h!.slack.posts().length === 1);
    expect(h.slack.posts()[0]).toMatchObject({ channel: 'C5', text: 'The answer to your task.' });
    await h.slack.waitFor('the acknowledgement', () => responsesTo(h!, responseId).length === 1);
    expect(responsesTo(h, responseId)[0]!.body).toMatchObject({ response_type: 'ephemeral' });
    expect(String(responsesTo(h, responseId)[0]!.body.text)).toMatch(/working on it/i);
    const userMsg = h.ai.requests[0]!.messages.filter((m) => m.role === 'user').at(-1);
    expect(String(userMsg?.content)).toContain('summarise the plan');
  });

  it('a badly signed command is refused with 401 and never reaches the gateway', async () => {
    h = await startSlackHarness();
    const res = await fetch(h.target, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)), 'x-slack-signature': 'v0=00' },
      body: 'command=%2Fhermes&text=help&user_id=U1&channel_id=C1&team_id=T0TEAM&response_url=http%3A%2F%2F127.0.0.1%3A1%2Fx',
    });
    expect(res.status).toBe(401);
    expect(h.slack.responses).toHaveLength(0);
  });
});
