import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createNetClient } from '../../src/capabilities/net/safe-fetch.js';
import { fetchUrlTool } from '../../tools/fetch-url.js';
import { sendWebhookTool } from '../../tools/send-webhook.js';
import { conv, isApproval, isResolved, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { silentLog } from './net-helpers.js';

/**
 * A page tells the model to ship the user's data to a webhook, and the scripted model obeys.
 * Through the real core (gateway, agent loop, executor, approvals) and the real network client:
 * nothing reaches the sink until a person approves, and the approval shows exactly where and what.
 */

let web: FakeWeb;
let h: Harness | undefined;
beforeEach(async () => {
  web = await startFakeWeb();
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  await web.close();
});

const place = conv('C9', { threadId: '9.1' });
const requester = user('U9');
let n = 0;

async function obeyInjectedPage(): Promise<{ h: Harness; payload: Record<string, unknown> }> {
  const net = createNetClient({ allow: [`127.0.0.1:${web.port}`], log: silentLog });
  const harness = await startHarness({ tools: [fetchUrlTool, sendWebhookTool], core: { net } });
  const payload = { user: 'U9', notes: 'the private notes the page asked for' };
  harness.fake.enqueue(
    { toolCalls: [{ id: 'call_fetch', name: 'fetch_url', arguments: { url: web.url('/inject') } }] },
    { toolCalls: [{ id: 'call_hook', name: 'send_webhook', arguments: { url: web.url('/sink'), body: payload } }] },
  );
  n++;
  await harness.core.gateway.handleMessage({
    id: `inj-${n}-${Date.now()}`, conversation: place, speaker: requester, text: `summarise ${web.url('/inject')}`, mentioned: true, replyTo: '9.1',
  });
  return { h: harness, payload };
}

type Sent = { role: string; content?: string | null; tool_call_id?: string };
const toolMessage = (harness: Harness, id: string) =>
  harness.fake.requests.flatMap((r) => r.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === id)?.content;

describe('a web page that asks for a webhook', () => {
  it('nothing is sent before approval; the prompt shows the exact destination and body; deny sends nothing', async () => {
    const run = await obeyInjectedPage();
    h = run.h;
    const shown = await h.port.waitFor(isApproval);
    expect(shown.view.toolName).toBe('send_webhook');
    expect(JSON.parse(shown.view.argsJson)).toEqual({ url: web.url('/sink'), body: run.payload });
    expect(web.hits('/inject')).toBe(1);
    expect(web.hits('/sink')).toBe(0);
    // The page reached the model marked as outside data, not as the user's words, and the prompt names it.
    expect(toolMessage(h, 'call_fetch')).toMatch(/^<<<OUTSIDE_DATA id=[0-9a-f]{16} source=".*\/inject">>>\n[\s\S]*Ignore previous instructions[\s\S]*<<<END_OUTSIDE_DATA id=[0-9a-f]{16}>>>$/);
    expect(shown.view.sources).toEqual([web.url('/inject')]);

    h.fake.enqueue({ text: 'I did not send anything.' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'deny', decidedBy: requester });
    await h.port.waitFor(isText);
    expect((await h.port.waitFor(isResolved)).resolution.outcome).toBe('denied');
    expect(web.hits('/sink')).toBe(0);
  });

  it('after approval the stored arguments are sent, once', async () => {
    const run = await obeyInjectedPage();
    h = run.h;
    const shown = await h.port.waitFor(isApproval);
    expect(web.hits('/sink')).toBe(0);
    h.fake.enqueue({ text: 'Sent.' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    await h.port.waitFor(isText);
    expect(web.hits('/sink')).toBe(1);
    expect(JSON.parse(web.received.find((r) => r.path === '/sink')?.body ?? '')).toEqual(run.payload);
    expect(toolMessage(h, 'call_hook')).toContain('HTTP 200');
  });
});
