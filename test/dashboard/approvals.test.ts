import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { conv, isApproval, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { serveDashboard, TOKEN, type Served } from './dashboard-helper.js';

/**
 * Approvals on the dashboard, from a real turn through the real approval flow: while the turn
 * waits it is listed as unfinished with the request shown; once someone decides, the timeline
 * says what was decided and by whom, then the tool call that ran and the end of the turn.
 */

let h: Harness;
let d: Served;

const deploy = defineTool({
  name: 'deploy_service',
  description: 'Deploys a service (needs approval)',
  input: z.object({ service: z.string() }),
  needsApproval: true,
  sideEffects: true,
  async run({ service }) {
    return `deployed ${service}`;
  },
});

const bearer = { authorization: `Bearer ${TOKEN}` };
const get = async (p: string) => {
  const res = await d.get(p, bearer);
  expect(res.status, p).toBe(200);
  return res.text();
};

beforeAll(async () => {
  h = await startHarness({ extraTools: [deploy] });
  d = await serveDashboard({ tracesDir: path.join(h.dataDir, 'traces'), evalsDir: path.join(h.dataDir, 'evals') });
}, 60_000);

afterAll(async () => {
  await d?.close();
  await h?.close();
});

describe('approvals on the dashboard', () => {
  it('shows a waiting turn as unfinished, then who approved it and what ran', async () => {
    h.fake.enqueue({ toolCalls: [{ id: 'dep1', name: 'deploy_service', arguments: { service: 'billing' } }] });
    await h.core.gateway.handleMessage({ id: 'ap-1', conversation: conv('C1', { threadId: '1.1' }), speaker: user('U1'), text: 'deploy billing please', mentioned: true, replyTo: '1.1' });
    const shown = await h.port.waitFor(isApproval);
    await h.core.flushTraces();

    const waiting = await get('/dashboard/turns?outcome=unfinished');
    expect(waiting).toContain('deploy billing please');
    const href = /href="(\/dashboard\/turns\/[^"]+)"/.exec(waiting)![1]!;
    const before = await get(href);
    expect(before).toMatch(/Approval · deploy_service<\/span><span class="meta">pending/);
    expect(before).not.toContain('Turn ended');

    h.fake.enqueue({ text: 'Billing is deployed.' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: user('U1') });
    await h.port.waitFor(isText);
    await h.core.flushTraces();

    const after = await get(href);
    expect(after).toMatch(/Approval · deploy_service<\/span><span class="meta">approved · decided by slack:T1:U1/);
    const order = ['pending', 'approved · decided by', 'data-tool="deploy_service"', 'deployed billing', 'Turn ended · answered'].map((s) => after.indexOf(s));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(await get('/dashboard/turns?outcome=unfinished')).toContain('No turns match.');
  });
});
