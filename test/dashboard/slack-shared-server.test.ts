import { afterEach, describe, expect, it } from 'vitest';
import { createBotDashboard } from '../../src/operations/dashboard/bot-dashboard.js';
import { calculator } from '../../tools/calculator.js';
import { startSlackHarness, type SlackHarness } from '../slack/slack-harness.js';
import { TOKEN } from './dashboard-helper.js';

/**
 * Slack HTTP mode: the dashboard is a route on the bot's one HTTP server, on the same port as
 * POST /slack/events, and a real Slack turn shows up on it. Without a token there is no dashboard.
 */

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('dashboard in Slack HTTP mode', { timeout: 60_000 }, () => {
  it('is served on the Slack events\' port and shows a turn that came in through Slack', async () => {
    h = await startSlackHarness({
      env: { HERMES_DASHBOARD_TOKEN: TOKEN },
      extraTools: [calculator],
      dashboard: (core, config) => createBotDashboard({ ...config, dashboard: config.dashboard! }, core.registry, core.log).handle,
    });
    h.ai.enqueue({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { expression: '6 * 7' } }] }, { text: 'It is 42.' });
    await h.dm('D1', 'U1', 'what is 6*7?');
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1, 30_000);
    await h.core.flushTraces();

    // The sign-in form posts to the same server without Slack's timestamp header.
    const signIn = await fetch(`${h.base}/dashboard/login`, { method: 'POST', body: new URLSearchParams({ token: TOKEN }), redirect: 'manual' });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const list = await (await fetch(`${h.base}/dashboard/turns?platform=slack`, { headers: { cookie } })).text();
    expect(list).toContain('what is 6*7?');
    const href = /href="(\/dashboard\/turns\/[^"]+)"/.exec(list)![1]!;
    const turn = await (await fetch(`${h.base}${href}`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(turn).toContain('data-tool="calculator"');
    expect(turn).toContain('It is 42.');

    // Slack's own endpoint keeps its checks: an unsigned, undated POST is still refused.
    expect((await fetch(`${h.base}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(401);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('does not exist without HERMES_DASHBOARD_TOKEN: /dashboard is 404', async () => {
    h = await startSlackHarness();
    for (const p of ['/dashboard', '/dashboard/login', '/dashboard/turns']) expect((await fetch(`${h.base}${p}`)).status, p).toBe(404);
    expect((await fetch(`${h.base}/dashboard/login`, { method: 'POST', body: 'token=x', headers: { 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)) } })).status).toBe(404);
  });
});
