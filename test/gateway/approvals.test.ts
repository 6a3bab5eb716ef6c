import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { conv, isApproval, isResolved, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { InboundMessage } from '../../src/basics/types.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import type { Store } from '../../src/state/store/store.js';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function riskyTool(runs: Array<unknown>) {
  return defineTool({
    name: 'risky_action',
    description: 'Does something that must be approved',
    input: z.object({ target: z.string(), count: z.number() }),
    needsApproval: true,
    sideEffects: true,
    async run(args) {
      runs.push(args);
      return `did it to ${args.target}`;
    },
  });
}

let n = 0;
const place = conv('C1', { threadId: '1.1' });
const requester = user('U1');
function msg(text: string, over: Partial<InboundMessage> = {}): InboundMessage {
  n++;
  return { id: `a${n}-${Date.now()}`, conversation: place, speaker: requester, text, mentioned: true, replyTo: '1.1', ...over };
}

type Sent = { role: string; content?: string | null; tool_call_id?: string };
const toolResult = (h: Harness, callId: string) =>
  h.fake.requests.flatMap((r) => r.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content;

async function askForRisky(h: Harness, callId = 'call_r1') {
  h.fake.enqueue({ toolCalls: [{ id: callId, name: 'risky_action', arguments: { target: 'prod', count: '3' } }] });
  await h.core.gateway.handleMessage(msg('please do the risky thing'));
  return h.port.waitFor(isApproval);
}

describe('approvals', () => {
  it('stores the request, shows tool and exact arguments, and runs with them once approved', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const shown = await askForRisky(h);
    expect(shown.view.toolName).toBe('risky_action');
    expect(JSON.parse(shown.view.argsJson)).toEqual({ target: 'prod', count: 3 });
    expect(shown.conversation).toEqual(place);
    expect(runs).toHaveLength(0);
    h.fake.enqueue({ text: 'Done: it ran on prod.' });
    const r = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    expect(r).toEqual({ kind: 'applied', outcome: 'approved' });
    const resolved = await h.port.waitFor(isResolved);
    expect(resolved.resolution.outcome).toBe('approved');
    expect(resolved.resolution.decidedBy?.userId).toBe('U1');
    expect(resolved.ref).toBe(shown.ref);
    const answer = await h.port.waitFor(isText);
    expect(answer.text).toBe('Done: it ran on prod.');
    expect(runs).toEqual([{ target: 'prod', count: 3 }]);
    expect(toolResult(h, 'call_r1')).toBe('did it to prod');
  });

  it('tells the model a denied action did not run and must not be retried', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const shown = await askForRisky(h);
    h.fake.enqueue({ text: 'OK, I did not do it.' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'deny', decidedBy: requester });
    await h.port.waitFor(isText);
    expect(runs).toHaveLength(0);
    expect(toolResult(h, 'call_r1')).toMatch(/did not run.*Do not retry/s);
    expect((await h.port.waitFor(isResolved)).resolution.outcome).toBe('denied');
  });

  it('refuses a non-requester privately, keeps it pending, and lets an admin decide', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)], env: { HERMES_ADMINS: 'slack:UADMIN' } });
    const shown = await askForRisky(h);
    const other = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: user('U2') });
    expect(other.kind).toBe('not_allowed');
    expect(h.port.events.some((e) => e.kind === 'resolved')).toBe(false);
    h.fake.enqueue({ text: 'ran it' });
    const admin = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: user('UADMIN') });
    expect(admin.kind).toBe('applied');
    await h.port.waitFor(isText);
    expect(runs).toHaveLength(1);
  });

  it('applies a double click exactly once', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const shown = await askForRisky(h);
    h.fake.enqueue({ text: 'ran once' });
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => h!.core.gateway.decideApproval({ approvalId: shown.view.id, decision: i % 2 ? 'deny' : 'approve', decidedBy: requester })),
    );
    expect(results.filter((r) => r.kind === 'applied')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'already')).toHaveLength(4);
    await h.port.waitFor(isText);
    await h.core.gateway.idle();
    expect(runs.length).toBeLessThanOrEqual(1);
    expect(h.port.events.filter((e) => e.kind === 'resolved')).toHaveLength(1);
  });

  it('cancels a pending request when a newer message arrives in the session', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const shown = await askForRisky(h);
    h.fake.enqueue({ text: 'answer to the new message' });
    await h.core.gateway.handleMessage(msg('never mind, something else'));
    expect((await h.port.waitFor(isResolved)).resolution.outcome).toBe('cancelled');
    expect((await h.port.waitFor(isText)).text).toBe('answer to the new message');
    expect(toolResult(h, 'call_r1')).toMatch(/did not run/);
    const late = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    expect(late).toEqual({ kind: 'already', outcome: 'cancelled' });
    expect(runs).toHaveLength(0);
  });

  it('expires a request nobody decided, and the turn goes on', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)], env: { HERMES_APPROVAL_TTL_MS: '300' } });
    await askForRisky(h);
    h.fake.enqueue({ text: 'It expired, so I did nothing.' });
    expect((await h.port.waitFor(isResolved)).resolution.outcome).toBe('expired');
    expect((await h.port.waitFor(isText)).text).toBe('It expired, so I did nothing.');
    expect(toolResult(h, 'call_r1')).toMatch(/did not run/);
    expect(runs).toHaveLength(0);
  });

  it('keeps a pending approval across a restart and runs it once after approval', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const shown = await askForRisky(h);
    await h.restart();
    h.fake.enqueue({ text: 'ran after restart' });
    const r = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    expect(r.kind).toBe('applied');
    expect((await h.port.waitFor(isText)).text).toBe('ran after restart');
    const again = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    expect(again.kind).toBe('already');
    await h.core.gateway.idle();
    expect(runs).toHaveLength(1);
  });

  it('tells the conversation when the paused turn cannot be read after Approve, instead of an unhandled rejection', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const shown = await askForRisky(h);
    await h.restart();
    // The paused turn's stored state no longer reads (a damaged row): the resume must say so.
    const damaged = await h.core.database.db.updateTable('hermes_paused_turn').set({ state: '{"turnId": ' }).executeTakeFirst();
    expect(Number(damaged.numUpdatedRows)).toBe(1);
    const r = await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    expect(r.kind).toBe('applied');
    const told = await h.port.waitFor(isText);
    expect(told.text).toMatch(/decision on risky_action was recorded, but I could not act on it/);
    expect(told.conversation).toEqual(place);
    expect(runs).toHaveLength(0);
    await h.core.gateway.idle();
  });

  it('counts steps across the pause', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)], env: { HERMES_MAX_STEPS: '1' } });
    const shown = await askForRisky(h);
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    const t = await h.port.waitFor(isText);
    expect(t.text).toMatch(/1 steps/);
    expect(runs).toHaveLength(1);
    expect(h.fake.requests).toHaveLength(1);
  });

  it('stop cancels the pending approval', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    await askForRisky(h);
    const reply = await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: 'stop' });
    expect(reply.kind).toBe('private');
    expect(reply.text).toMatch(/cancelled 1 pending approval/);
    expect((await h.port.waitFor(isResolved)).resolution.outcome).toBe('cancelled');
    await h.core.gateway.idle();
    expect(toolResult(h, 'call_r1') ?? '').toBe('');
    expect(runs).toHaveLength(0);
  });
});

describe('a crash after the approval prompt was posted', () => {
  it('keeps the request: the turn waits for the decision, nothing is reported interrupted, approving runs the action once', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const db = h.core.database.db;
    // The turn's work row as the running turn holds it (claimed once), to put back as kill -9 leaves it.
    let row: Record<string, unknown> | undefined;
    h.fake.setHandler(async () => {
      row ??= await db.selectFrom('hermes_work').selectAll().where('kind', '=', 'turn').executeTakeFirst();
      return { toolCalls: [{ id: 'call_c1', name: 'risky_action', arguments: { target: 'prod', count: 1 } }] };
    });
    await h.core.gateway.handleMessage(msg('please do the risky thing'));
    const shown = await h.port.waitFor(isApproval);
    await h.core.gateway.idle();
    expect(row).toMatchObject({ kind: 'turn', attempts: 1 });
    expect(await db.selectFrom('hermes_work').selectAll().execute()).toEqual([]);
    // Killed after the prompt went out and before the row's end was committed: the row is back.
    await db.insertInto('hermes_work').values({ ...(row as object), claimed_by: null, claimed_until: null } as never).execute();

    await h.restart();
    await h.core.gateway.idle();
    expect(await h.core.database.db.selectFrom('hermes_work').selectAll().where('kind', '=', 'turn').execute()).toEqual([]);
    expect(h.port.events.filter(isText).map((e) => e.text)).not.toContain(RESTART_INTERRUPTED);
    expect(h.port.events.filter(isResolved)).toEqual([]);

    h.fake.setHandler(() => ({ text: 'Done on prod.' }));
    expect(await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester })).toMatchObject({ kind: 'applied' });
    expect((await h.port.waitFor(isText)).text).toBe('Done on prod.');
    expect(runs).toEqual([{ target: 'prod', count: 1 }]);
  });

  it('a later message cut off by a crash is reported interrupted even while an earlier turn\'s approved request waits behind it', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const db = h.core.database.db;
    h.fake.setHandler(() => ({ toolCalls: [{ id: 'call_e1', name: 'risky_action', arguments: { target: 'prod', count: 1 } }] }));
    await h.core.gateway.handleMessage(msg('please do the risky thing'));
    const shown = await h.port.waitFor(isApproval);
    await h.core.gateway.idle();
    // Approved, as a click leaves it (the resume row is written back by the restart's recovery,
    // behind the next message in the lane); the next message's turn keeps the approved request open.
    await db.updateTable('hermes_approval').set({ status: 'approved' }).where('id', '=', shown.view.id).execute();
    let asked!: () => void;
    const atModel = new Promise<void>((r) => (asked = r));
    h.fake.setHandler(() => {
      asked();
      return { hang: true };
    });
    await h.core.gateway.handleMessage(msg('and another thing'));
    await atModel;
    // Cut off during its model call: its row stays, claimed once, its question in the session.
    await h.restart();
    h.fake.setHandler(() => ({ text: 'Done on prod.' }));
    await h.core.gateway.idle();
    const said = h.port.events.filter(isText).map((e) => e.text);
    expect(said).toContain(RESTART_INTERRUPTED);
    expect(said).toContain('Done on prod.');
    expect(runs).toEqual([{ target: 'prod', count: 1 }]);
    expect(await h.core.database.db.selectFrom('hermes_work').selectAll().execute()).toEqual([]);
  });
});
