import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock } from '../../src/basics/clock.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { createApprovalStore } from '../../src/state/approvals/approval-store.js';
import { createFactStore } from '../../src/state/memory/fact-store.js';
import { createReminderStore } from '../../src/state/reminders/reminder-store.js';
import { createScheduleStore } from '../../src/state/schedules/schedule-store.js';
import { createSessionStore } from '../../src/state/sessions/session-store.js';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import { isText, startHarness, type Harness } from '../helpers/core-harness.js';

/**
 * The first start of this version on a data directory the round-2 code wrote
 * (test/fixtures/round2-data, see its README): sessions with their history, the joined thread,
 * the pending approval, facts, the reminder and the schedule are all there afterwards, one log
 * line says what moved, and a second start moves nothing.
 */
const FIXTURE = path.join(import.meta.dirname, '../fixtures/round2-data');
const alice: Speaker = { platform: 'slack', workspaceId: 'T1', userId: 'U_ALICE', displayName: 'alice' };
const dm: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'D_ALICE', isDm: true };
const thread: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'C_TEAM', threadId: '1764500000.000100', isDm: false };

let h: Harness | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

/** A logger whose lines the test can read. */
function capturedLog() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('a round-2 data directory', () => {
  it('is carried over on the first start, once, with a log line saying what moved', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-round2-'));
    await cp(FIXTURE, dataDir, { recursive: true });
    const turnState = await addRound2PausedTurn(path.join(dataDir, 'hermes.sqlite'));
    const runs: unknown[] = [];
    const risky = defineTool({ name: 'risky_action', description: 'x', input: z.object({ target: z.string() }), needsApproval: true, sideEffects: true, run: async (a) => { runs.push(a); return 'done'; } });
    const first = capturedLog();
    h = await startHarness({ env: { HERMES_DATA_DIR: dataDir }, extraTools: [risky], core: { log: first.log } });

    const moved = first.lines.filter((l) => String(l.msg).startsWith('carried round-2 state over'));
    expect(moved).toHaveLength(1);
    expect(moved[0]).toMatchObject({ approvals: 1, sessions: 3, historyMessages: 44, conversations: 2, messages: 0, receipts: 0, reminders: 1, schedules: 1, pausedTurns: 1 });
    expect(moved[0]).toMatchObject({ usageCounters: 1, notedThreads: 1 });
    for (const prefix of ['turn:', 'usage:', 'context:', 'rate:']) expect(await h.core.store.keysWithPrefix(prefix)).toEqual([]);
    expect(await h.core.database.db.selectFrom('hermes_usage').select(['kind', 'subject', 'tokens']).execute()).toEqual([{ kind: 'person', subject: 'slack:U_ALICE', tokens: 1234 }]);
    expect((await h.core.database.db.selectFrom('hermes_noted_message').select(['conversation', 'id']).execute())).toEqual([{ conversation: 'slack:T1:C_TEAM:1764500000.000100', id: '1764500000.000300' }]);
    const pausedRows = await h.core.database.db.selectFrom('hermes_paused_turn').select(['turn_id', 'session_id', 'state']).execute();
    expect(pausedRows.map((r) => ({ ...r, state: JSON.parse(r.state) as unknown }))).toEqual([{ turn_id: 'turn-r2', session_id: turnState.sessionId, state: turnState }]);
    expect(await h.core.store.keysWithPrefix('session:')).toEqual([]);
    expect(await h.core.store.keysWithPrefix('reminder')).toEqual([]);
    expect(await h.core.store.keysWithPrefix('schedule')).toEqual([]);
    expect(await h.core.store.keysWithPrefix('approval:')).toEqual([]);

    // Sessions: the live one, the archived one with its summary and all 40 messages, the joined thread.
    const sessions = createSessionStore(h.core.database, systemClock);
    const live = await sessions.current(dm);
    expect((await sessions.history(live.id)).map((m) => m.role)).toEqual(['user', 'assistant']);
    const archived = await sessions.archived(dm);
    expect(archived).toHaveLength(1);
    const old = await sessions.get(archived[0]!);
    expect(old).toMatchObject({ summary: 'alice asked twenty questions', summarizedUpTo: 10 });
    expect((await sessions.history(archived[0]!)).map((m) => m.content)).toEqual(Array.from({ length: 40 }, (_, i) => (i % 2 ? `answer ${i}` : `question ${i}`)));
    expect(await sessions.isJoined(thread)).toBe(true);
    expect((await sessions.history((await sessions.current(thread)).id)).map((m) => m.content)).toEqual(['hello team', 'hello']);

    // Facts, the reminder and the schedule read as before.
    expect((await createFactStore(h.core.store, systemClock).forUser(alice).recall()).map((f) => f.text).sort()).toEqual(['alice prefers tea', 'alice works on the billing team']);
    const reminders = createReminderStore(h.core.database, systemClock, { addIn: async () => true, wake: () => undefined });
    expect((await reminders.forUser(alice, dm).list()).map((r) => [r.text, r.dueAt])).toEqual([['renew the certificate', Date.UTC(2027, 10, 1, 9, 0, 0)]]);
    // It fires through the work queue: its row waits for its time.
    const [reminder] = await reminders.forUser(alice, dm).list();
    expect(await h.core.database.db.selectFrom('hermes_work').select(['kind', 'due_at']).where('id', '=', `reminder:${reminder!.id}`).execute()).toEqual([{ kind: 'reminder', due_at: Date.UTC(2027, 10, 1, 9, 0, 0) }]);
    const schedules = createScheduleStore(h.core.database, systemClock, { minIntervalS: 60, maxPerUser: 10, defaultTimezone: 'UTC' }, { addIn: async () => true, wake: () => undefined });
    const [weekly] = await schedules.forUser(alice, dm).list();
    expect([weekly?.name, weekly?.status]).toEqual(['weekly report', 'active']);
    expect(await h.core.database.db.selectFrom('hermes_work').select(['kind', 'due_at']).where('lane', '=', `schedule:${weekly!.id}`).execute()).toEqual([{ kind: 'scheduled', due_at: weekly!.nextRuns[0] }]);

    // The pending approval is still pending, and approving it runs the call and goes on with the
    // turn from its carried state (the header of the scheduled run it paused in starts the answer).
    const [pending] = await createApprovalStore(h.core.database, systemClock).listOpen();
    expect(pending).toMatchObject({ status: 'pending', toolName: 'risky_action', sessionId: live.id, args: { target: 'prod' } });
    expect(pending?.tampered).toBeUndefined();
    h.fake.enqueue({ text: 'Deployed to prod.' });
    expect(await h.core.gateway.decideApproval({ approvalId: pending!.id, decision: 'approve', decidedBy: alice })).toMatchObject({ kind: 'applied' });
    expect((await h.port.waitFor(isText, 30_000)).text).toBe('⏰ deploy check\nDeployed to prod.');
    expect(runs).toEqual([{ target: 'prod' }]);
    await h.core.gateway.idle();
    expect(await h.core.database.db.selectFrom('hermes_paused_turn').selectAll().execute()).toEqual([]);

    // A second start moves nothing and the data is unchanged.
    const second = capturedLog();
    h = await restartWith(h, second.log);
    expect(second.lines.filter((l) => String(l.msg).startsWith('carried round-2 state over'))).toEqual([]);
    const again = createSessionStore(h.core.database, systemClock);
    expect((await again.current(dm)).id).toBe(live.id);
    expect(await again.archived(dm)).toEqual(archived);
    expect(await createApprovalStore(h.core.database, systemClock).listOpen()).toEqual([]);
  });
});

/**
 * The fixture's approval belongs to turn `turn-r2`, whose paused state the generator did not
 * write. Round 2 kept it as the key-value record `turn:<turnId>` (src/gateway/turn-driver.ts at
 * 6d7596f: `store.set(\`turn:${state.turnId}\`, state)`), in its TurnState shape; this adds that
 * record, as a scheduled run's turn, to the copy.
 */
async function addRound2PausedTurn(file: string) {
  const kv = await createSqliteStore({ file, log: pino({ level: 'silent' }) });
  try {
    const sessionId = await kv.get<string>('session:current:slack%3AT1%3AD_ALICE%3A-');
    if (!sessionId) throw new Error('the fixture has no live session for alice');
    const state = {
      turnId: 'turn-r2', sessionId, conversation: dm, speaker: alice, isAdmin: false, stepsUsed: 1,
      startedAt: Date.UTC(2026, 10, 30, 9, 0, 0), promptTokens: 120, completionTokens: 30, paused: true, header: '⏰ deploy check',
    };
    await kv.set('turn:turn-r2', state);
    // Round 2's other records of the same kind: alice's token count today, a message noted in the joined thread.
    await kv.set(`usage:tokens:${new Date().toISOString().slice(0, 10)}:slack%3AU_ALICE`, 1234);
    await kv.set('context:pending:slack%3AT1%3AC_TEAM%3A1764500000.000100', [{ id: '1764500000.000300', author: { id: 'U_BOB', name: 'bob', isBot: false }, at: 1764500000300, text: 'bob noted this' }]);
    await kv.set('rate:slack%3AU_ALICE', Date.now() + 1000);
    return state;
  } finally {
    await kv.close();
  }
}

/** The harness restarts with its own options; a restart with another logger is a new core on the same directory. */
async function restartWith(old: Harness, log: pino.Logger): Promise<Harness> {
  await old.close();
  return startHarness({ env: { HERMES_DATA_DIR: dataDir! }, core: { log } });
}
