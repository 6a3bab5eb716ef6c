import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { createNetClient } from '../../src/capabilities/net/safe-fetch.js';
import { createApprovalStore, hashArgs } from '../../src/state/approvals/approval-store.js';
import { systemClock } from '../../src/basics/clock.js';
import { MAX_SHOWN_ARGS_CHARS } from '../../src/state/approvals/shown-args.js';
import { sendWebhookTool } from '../../tools/send-webhook.js';
import { conv, isApproval, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { startFakeWeb, type FakeWeb } from '../fakes/web/fake-web.js';
import { silentLog } from '../net/net-helpers.js';

/**
 * What the approver sees is exactly what runs: arguments shown in full (or refused as too large
 * to show), one digest on prompt and record, checks that need no person before the prompt, and no
 * redirect for an approved request with a body. Real core, real network client, real web server.
 */
let web: FakeWeb;
let h: Harness | undefined;
beforeEach(async () => {
  web = await startFakeWeb();
});
afterEach(async () => {
  await h?.close();
  if (h) await rm(h.dataDir, { recursive: true, force: true });
  h = undefined;
  await web.close();
});

const place = conv('C7', { threadId: '7.1' });
const requester = user('U7');
let n = 0;
type Sent = { role: string; content?: string | null; tool_call_id?: string };
const toolMessage = (harness: Harness, id: string) =>
  harness.fake.requests.flatMap((r) => r.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === id)?.content;

async function ask(args: Record<string, unknown>): Promise<Harness> {
  const net = createNetClient({ allow: [`127.0.0.1:${web.port}`], log: silentLog });
  const harness = await startHarness({ tools: [sendWebhookTool], core: { net } });
  harness.fake.enqueue({ toolCalls: [{ id: 'call_hook', name: 'send_webhook', arguments: args }] });
  await harness.core.gateway.handleMessage({ id: `shown-${++n}-${Date.now()}`, conversation: place, speaker: requester, text: 'send it', mentioned: true, replyTo: '7.1' });
  return harness;
}

describe('what the approver sees is what runs', () => {
  it('shows long arguments in full with the digest the stored record carries', async () => {
    const body = { note: 'x'.repeat(8_000), token: 'tail-END-visible' };
    h = await ask({ url: web.url('/sink'), body });
    const shown = await h.port.waitFor(isApproval);
    expect(shown.view.argsJson).toContain('tail-END-visible');
    expect(JSON.parse(shown.view.argsJson)).toEqual({ url: web.url('/sink'), body });
    const record = await createApprovalStore(h.core.database, systemClock).get(shown.view.id);
    expect(shown.view.argsDigest).toBe(record?.argsHash);
    expect(shown.view.argsDigest).toBe(hashArgs({ url: web.url('/sink'), body }));
  });

  it('refuses arguments too large to show, before any prompt, with the reason for the model', async () => {
    const body = { padding: 'p'.repeat(MAX_SHOWN_ARGS_CHARS), token: 'hidden-at-the-end' };
    h = await ask({ url: web.url('/sink'), body });
    h.fake.enqueue({ text: 'It was too large to ask about.' });
    expect((await h.port.waitFor(isText)).text).toBe('It was too large to ask about.');
    expect(h.port.approvals()).toHaveLength(0);
    expect(toolMessage(h, 'call_hook')).toMatch(/did not run and was not sent for approval: its arguments are \d+ characters long when shown, and a person can be asked to approve at most 12000/);
    expect(web.hits('/sink')).toBe(0);
  });

  it('refuses a private address before asking anyone', async () => {
    h = await ask({ url: 'http://10.1.2.3/hook', body: { a: 1 } });
    h.fake.enqueue({ text: 'That address is not allowed.' });
    await h.port.waitFor(isText);
    expect(h.port.approvals()).toHaveLength(0);
    expect(toolMessage(h, 'call_hook')).toMatch(/refused/);
  });

  it('an approved request with a body does not follow a redirect; the model hears the target', async () => {
    const elsewhere = web.url('/echo');
    h = await ask({ url: web.url(`/redirect?status=307&to=${encodeURIComponent(elsewhere)}`), body: { secret: 'only-for-the-approved-url' } });
    const shown = await h.port.waitFor(isApproval);
    h.fake.enqueue({ text: 'It was redirected, so I stopped.' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    await h.port.waitFor(isText);
    expect(web.received.filter((r) => r.path === '/echo')).toHaveLength(0);
    expect(toolMessage(h, 'call_hook')).toContain(`redirecting to ${elsewhere}`);
    expect(toolMessage(h, 'call_hook')).toMatch(/not followed/);
  });
});
