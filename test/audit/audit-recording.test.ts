import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { scheduleTools } from '../../tools/schedules.js';
import type { AuditEntry, AuditFilter } from '../../src/state/audit/audit-log.js';
import { conv, isApproval, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';

/**
 * The audit rows the running core writes where things happen: the real gateway, approval flow,
 * gatekeeper and schedule store over the real SQLite file, driven like an adapter drives them.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const place = conv('C1', { threadId: '1.1' });
const requester = user('U1');
let n = 0;
const msg = (text: string, speaker = requester) => ({ id: `m${++n}-${Date.now()}`, conversation: place, speaker, text, mentioned: true, replyTo: '1.1' });

const risky = defineTool({
  name: 'risky_action',
  description: 'Does something that must be approved',
  input: z.object({ target: z.string() }),
  needsApproval: true,
  sideEffects: true,
  run: async (args) => `did it to ${args.target}`,
});

async function rows(filter: AuditFilter = {}): Promise<AuditEntry[]> {
  return (await h!.core.audit.list(filter, { limit: 100, offset: 0 })).entries.reverse();
}

/** Refusals are audited without holding up their answer: wait until the row is there. */
async function rowsUntil(filter: AuditFilter, count: number): Promise<AuditEntry[]> {
  for (let i = 0; i < 200; i++) {
    const r = await rows(filter);
    if (r.length >= count) return r;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error(`fewer than ${count} audit rows for ${JSON.stringify(filter)}: ${JSON.stringify(await rows(filter))}`);
}

describe('what the running bot audits', () => {
  it('the config hash at start; approvals with decider, tool and args hash; a click by someone else refused', async () => {
    h = await startHarness({ extraTools: [risky] });
    const [start] = await rows({ kind: 'config' });
    expect(start).toMatchObject({ outcome: 'start', actor: null });
    expect(start!.detail.configHash).toMatch(/^[0-9a-f]{16}$/);
    // The same settings give the same hash at the next start.
    await h.restart();
    const starts = await rows({ kind: 'config' });
    expect(starts).toHaveLength(2);
    expect(starts[1]!.detail.configHash).toBe(start!.detail.configHash);

    h.fake.enqueue({ toolCalls: [{ id: 'call_r', name: 'risky_action', arguments: { target: 'prod' } }] });
    await h.core.gateway.handleMessage(msg('do the risky thing'));
    const shown = await h.port.waitFor(isApproval);
    expect((await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: user('U2') })).kind).toBe('not_allowed');
    h.fake.enqueue({ text: 'done' });
    expect((await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester })).kind).toBe('applied');
    await h.port.waitFor(isText);
    await h.core.gateway.idle();
    const approvals = await rowsUntil({ kind: 'approval' }, 3);
    expect(approvals.map((r) => [r.outcome, r.actor])).toEqual([
      ['refused', 'slack:U2'],
      ['approved', 'slack:U1'],
      ['done', null],
    ]);
    for (const r of approvals) expect(r).toMatchObject({ tool: 'risky_action', channel: 'slack:C1', argsHash: shown.view.argsDigest });
    expect(approvals[0]!.detail).toMatchObject({ why: 'not_requester_or_admin', requester: 'slack:U1', approvalId: shown.view.id });
  });

  it('access and limit refusals, stops and commands, each with who and where', async () => {
    h = await startHarness({ env: { HERMES_ALLOW: 'slack:U1,slack:U3', HERMES_USER_RATE: '1' } });
    await h.core.gateway.handleMessage(msg('hello', user('U9')));
    const [refused] = await rowsUntil({ kind: 'access_refused' }, 1);
    expect(refused).toMatchObject({ outcome: 'not_allowed', actor: 'slack:U9', channel: 'slack:C1', detail: { source: 'message' } });

    h.fake.enqueue({ text: 'hi' });
    await h.core.gateway.handleMessage(msg('first', user('U3')));
    await h.core.gateway.handleMessage(msg('second, too soon', user('U3')));
    const [limited] = await rowsUntil({ kind: 'limit_refused' }, 1);
    expect(limited).toMatchObject({ outcome: 'rate_limit', actor: 'slack:U3', channel: 'slack:C1', detail: { source: 'message', perMinute: 1 } });

    // U3's "first" is answered before the commands, so neither stop nor new finds a turn running.
    await h.core.gateway.idle();
    await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: 'stop' });
    await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: 'new' });
    await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: 'forget f123' });
    await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: 'status' });
    await h.core.gateway.handleCommand({ conversation: place, speaker: user('U9'), text: 'new' });
    const stops = await rows({ kind: 'stop' });
    expect(stops.map((r) => [r.outcome, r.actor, r.detail.via])).toEqual([
      ['nothing_running', 'slack:U1', 'command'],
      ['nothing_running', 'slack:U1', 'new'],
    ]);
    const commands = await rows({ kind: 'admin_command' });
    // status only shows something; the refused `new` of U9 is an access refusal, not a command.
    expect(commands.map((r) => [r.actor, r.detail.command, r.detail.arg])).toEqual([
      ['slack:U1', 'new', undefined],
      ['slack:U1', 'forget', 'f123'],
    ]);
    expect((await rowsUntil({ kind: 'access_refused', actor: 'slack:U9' }, 2))[1]!.detail).toEqual({ source: 'command' });
  });

  it('a scheduled task created (after its approval) and cancelled', async () => {
    h = await startHarness({ tools: scheduleTools });
    h.fake.enqueue({ toolCalls: [{ id: 'call_s', name: 'schedule_task', arguments: { task: 'post the build status', schedule: 'every 2 hours', name: 'Builds' } }] });
    await h.core.gateway.handleMessage(msg('post the build status every 2 hours'));
    const shown = await h.port.waitFor(isApproval);
    h.fake.enqueue({ text: 'scheduled' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    const [created] = await rowsUntil({ kind: 'schedule' }, 1);
    expect(created).toMatchObject({ outcome: 'created', actor: 'slack:U1', channel: 'slack:C1', tool: 'schedule_task', detail: { schedule: 'every 2 hours', name: 'Builds' } });
    // The task text stays out of the audit; its hash is kept.
    expect(JSON.stringify(created)).not.toContain('post the build status');
    expect(created!.argsHash).toMatch(/^[0-9a-f]{64}$/);
    const id = String(created!.detail.scheduleId);
    await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: `unschedule ${id}` });
    const all = await rows({ kind: 'schedule' });
    expect(all.map((r) => [r.outcome, r.detail.scheduleId])).toEqual([
      ['created', id],
      ['cancelled', id],
    ]);
  });
});
