import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { conv, isApproval, isText, startHarness, user, type Harness, type PortEvent } from '../helpers/core-harness.js';
import type { InboundMessage } from '../../src/basics/types.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Crash windows of approvals and steering, each put on disk as kill -9 leaves it (the real core on
 * SQLite, the real openai SDK against the fake model), then a restart: a work row its job held
 * (claimed once) is back unclaimed, or a decision came in at the moment the recovery looks. Each
 * accepted message gets its answer or one "I was restarted" (then, if its answer was already out,
 * both: told twice rather than never), never two answers, never a notice for a turn that goes on.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const place = conv('C1', { threadId: '1.1' });
const requester = user('U1');
let n = 0;
function msg(text: string): InboundMessage {
  n++;
  return { id: `w${n}-${Date.now()}`, conversation: place, speaker: requester, text, mentioned: true, replyTo: '1.1' };
}

function riskyTool(runs: unknown[]) {
  return defineTool({
    name: 'risky_action',
    description: 'Does something that must be approved',
    input: z.object({ target: z.string() }),
    needsApproval: true,
    sideEffects: true,
    async run(args) {
      runs.push(args);
      return `did it to ${args.target}`;
    },
  });
}

type Row = Record<string, unknown>;
const lastRole = (req: ChatCompletionRequestBody) => req.messages.at(-1)?.role;
const texts = (events: PortEvent[]) => events.filter(isText).map((e) => e.text);

/** The row of `kind` as its running job holds it (claimed once), to put back as kill -9 leaves it. */
async function heldRow(h: Harness, kind: string): Promise<Row | undefined> {
  return h.core.database.db.selectFrom('hermes_work').selectAll().where('kind', '=', kind).executeTakeFirst();
}
async function putBack(h: Harness, row: Row, claimed = false): Promise<void> {
  await h.core.database.db
    .insertInto('hermes_work')
    .values({ ...row, ...(claimed ? {} : { claimed_by: null, claimed_until: null }) } as never)
    .execute();
}

describe('crash windows', () => {
  it('c. a denied continuation cut off after posting its answer is not answered a second time', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    let row: Row | undefined;
    h.fake.setHandler(async (req) => {
      if (!req.messages.some((m) => m.role === 'tool')) return { toolCalls: [{ id: 'call_c', name: 'risky_action', arguments: { target: 'prod' } }] };
      row ??= await heldRow(h!, 'resume');
      return { text: 'OK, I did not do it.' };
    });
    await h.core.gateway.handleMessage(msg('please do the risky thing'));
    const shown = await h.port.waitFor(isApproval);
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'deny', decidedBy: requester });
    await h.port.waitFor((e): e is PortEvent => isText(e) && e.text === 'OK, I did not do it.');
    await h.core.gateway.idle();
    expect(row).toMatchObject({ kind: 'resume', attempts: 1 });
    // Killed after the answer was posted, before the row's end was committed.
    await putBack(h, row!);
    const before = texts(h.port.events);
    const asked = h.fake.requests.length;

    await h.restart();
    await h.core.gateway.idle();
    const said = [...before, ...texts(h.port.events)];
    expect(said.filter((t) => t === 'OK, I did not do it.')).toHaveLength(1);
    expect(said.filter((t) => t === RESTART_INTERRUPTED)).toHaveLength(1);
    expect(h.fake.requests).toHaveLength(asked);
    expect(runs).toEqual([]);
    expect(await h.core.database.db.selectFrom('hermes_work').selectAll().execute()).toEqual([]);
  });

  it('a. a decision that lands while the recovery looks (its prompt posted, its reference lost) goes on with the turn: no "I was restarted" before its answer', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const db = () => h!.core.database.db;
    let row: Row | undefined;
    h.fake.setHandler(async (req) => {
      if (lastRole(req) === 'tool') return { text: 'Understood, not doing it.' };
      row ??= await heldRow(h!, 'turn');
      return { toolCalls: [{ id: 'call_a', name: 'risky_action', arguments: { target: 'prod' } }] };
    });
    await h.core.gateway.handleMessage(msg('please do the risky thing'));
    const shown = await h.port.waitFor(isApproval);
    await h.core.gateway.idle();
    // As kill -9 left it just after the prompt went out: the turn's row still held, the prompt's
    // reference not stored. Held, the row keeps the lane, so the click's resume waits behind it.
    await putBack(h, row!, true);
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'deny', decidedBy: requester });
    const rec = await db().selectFrom('hermes_approval').select('record').where('id', '=', shown.view.id).executeTakeFirstOrThrow();
    const { messageRef: _ref, ...rest } = JSON.parse(rec.record) as Record<string, unknown>;
    await db().updateTable('hermes_approval').set({ record: JSON.stringify(rest) }).where('id', '=', shown.view.id).execute();
    expect(await db().selectFrom('hermes_work').select('kind').orderBy('order_key').execute()).toEqual([{ kind: 'turn' }, { kind: 'resume' }]);

    await h.restart();
    await h.core.gateway.idle();
    expect(texts(h.port.events)).toEqual(['Understood, not doing it.']);
    // The model heard the denial, not "interrupted".
    const toolMsg = h.fake.requests.at(-1)!.messages.find((m) => m.role === 'tool') as { content?: string };
    expect(toolMsg.content).toMatch(/did not run/);
    expect(runs).toEqual([]);
    expect(await db().selectFrom('hermes_work').selectAll().execute()).toEqual([]);
  });

  it('b. a continuation paused on a second approval and killed before its row was deleted waits for that approval, without "I was restarted"', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    let row: Row | undefined;
    h.fake.setHandler(async (req) => {
      const results = req.messages.filter((m) => m.role === 'tool').length;
      if (results === 0) return { toolCalls: [{ id: 'call_b1', name: 'risky_action', arguments: { target: 'one' } }] };
      if (results === 1) {
        row ??= await heldRow(h!, 'resume');
        return { toolCalls: [{ id: 'call_b2', name: 'risky_action', arguments: { target: 'two' } }] };
      }
      return { text: 'Both done.' };
    });
    await h.core.gateway.handleMessage(msg('do both risky things'));
    const first = await h.port.waitFor(isApproval);
    await h.core.gateway.decideApproval({ approvalId: first.view.id, decision: 'approve', decidedBy: requester });
    await h.port.waitForCount(isApproval, 2);
    await h.core.gateway.idle();
    const second = h.port.approvals()[1]!;
    expect(row).toMatchObject({ kind: 'resume', attempts: 1 });
    await putBack(h, row!);

    await h.restart();
    await h.core.gateway.idle();
    expect(texts(h.port.events)).toEqual([]);
    expect(await h.core.database.db.selectFrom('hermes_paused_turn').selectAll().execute()).toHaveLength(1);

    expect(await h.core.gateway.decideApproval({ approvalId: second.view.id, decision: 'approve', decidedBy: requester })).toMatchObject({ kind: 'applied' });
    expect((await h.port.waitFor(isText)).text).toBe('Both done.');
    await h.core.gateway.idle();
    expect(texts(h.port.events)).toEqual(['Both done.']);
    expect(runs).toEqual([{ target: 'one' }, { target: 'two' }]);
  });

  it('d. a message taken into a turn and then claimed without running is answered by its own turn, not told "I was restarted"', async () => {
    h = await startHarness({ tools: [getCurrentTime], env: { HERMES_BUSY_MODE: 'steer' } });
    const db = () => h!.core.database.db;
    let atSecondCall!: () => void;
    const secondCall = new Promise<void>((r) => (atSecondCall = r));
    let gotSteer = false;
    h.fake.setHandler(async (req) => {
      const said = req.messages.filter((m) => m.role === 'user').map((m) => String(m.content));
      if (said.some((t) => t.includes('and the date too'))) {
        if (!gotSteer) {
          gotSteer = true;
          atSecondCall();
          return { hang: true };
        }
        return { text: 'answer with the date' };
      }
      return { toolCalls: [{ id: 'call_t', name: 'get_current_time', arguments: { timezone: 'UTC' } }] };
    });
    // The first call returns a tool call; the second message is accepted meanwhile and taken in
    // before the turn's next model call, which hangs.
    await h.core.gateway.handleMessage(msg('what time is it'));
    await waitFor('the first model call', () => h!.fake.requests.length > 0, { everyMs: 5 });
    await h.core.gateway.handleMessage(msg('and the date too'));
    await secondCall;
    const taken = await db().selectFrom('hermes_work').select(['id', 'payload']).where('kind', '=', 'turn').orderBy('order_key').execute();
    expect(taken).toHaveLength(2);
    expect(JSON.parse(taken[1]!.payload)).toMatchObject({ takenIn: true });
    // Its row claimed once by a run that never started its turn (a claim that came back late, or
    // killed right after the claim); then the turn that took it in is cut off.
    await db().updateTable('hermes_work').set({ attempts: 1 }).where('id', '=', taken[1]!.id).execute();
    await h.restart();
    await h.core.gateway.idle();
    expect(texts(h.port.events)).toEqual([RESTART_INTERRUPTED, 'answer with the date']);
    expect(await db().selectFrom('hermes_work').selectAll().execute()).toEqual([]);
  });
  it('e. a turn reported interrupted from its resume, or ended by a cancel, leaves no stored state behind', async () => {
    const runs: unknown[] = [];
    h = await startHarness({ extraTools: [riskyTool(runs)] });
    const paused = () => h!.core.database.db.selectFrom('hermes_paused_turn').selectAll().execute();
    let atContinuation!: () => void;
    const continuing = new Promise<void>((r) => (atContinuation = r));
    h.fake.setHandler(async (req) => {
      if (!req.messages.some((m) => m.role === 'tool')) return { toolCalls: [{ id: 'call_e', name: 'risky_action', arguments: { target: 'prod' } }] };
      atContinuation();
      return { hang: true };
    });
    await h.core.gateway.handleMessage(msg('please do the risky thing'));
    const shown = await h.port.waitFor(isApproval);
    expect(await paused()).toHaveLength(1);
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: requester });
    // The action ran; the turn is cut off while the model answers after it.
    await continuing;
    await h.restart();
    await h.core.gateway.idle();
    expect(texts(h.port.events)).toEqual([RESTART_INTERRUPTED]);
    expect(runs).toEqual([{ target: 'prod' }]);
    expect(await paused()).toEqual([]);

    // `/hermes stop` cancels a pending request: its turn ends, and its state goes with it.
    h.fake.setHandler(async () => ({ toolCalls: [{ id: 'call_e2', name: 'risky_action', arguments: { target: 'staging' } }] }));
    await h.core.gateway.handleMessage(msg('now the staging one'));
    await h.port.waitFor(isApproval);
    expect(await paused()).toHaveLength(1);
    await h.core.gateway.handleCommand({ conversation: place, speaker: requester, text: 'stop' });
    await h.core.gateway.idle();
    expect(await paused()).toEqual([]);
    expect(runs).toEqual([{ target: 'prod' }]);
  });
});
