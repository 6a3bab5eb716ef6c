import { afterEach, describe, expect, it } from 'vitest';
import { storeKey } from '../../src/state/store/store.js';
import { systemClock } from '../../src/basics/clock.js';
import { createApprovalStore, hashArgs } from '../../src/state/approvals/approval-store.js';
import type { InboundMessage } from '../../src/basics/types.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';

/**
 * A round-2 data directory: accepted messages waiting in the key-value inbox (`inbox:<id>`, as
 * round 2's gateway/inbox.ts wrote them) and request bodies journaled before an acknowledgement
 * (`receipt:<platform>:<id>`). The first start of this version moves them into the tables.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const place = conv('C_OLD', { isDm: true });
const message = (id: string, text: string): InboundMessage => ({ id, conversation: place, speaker: user('U_OLD'), text, mentioned: true, replyTo: id });

describe('carrying a round-2 data directory over', () => {
  it('answers a message round 2 accepted but never started, once, and moves its unacknowledged requests into the journal table', async () => {
    h = await startHarness();
    const old = message('C_OLD:1.0', 'left over from round two');
    // Written the way round 2 wrote them, into the same key-value store.
    await h.core.store.set(storeKey('inbox', old.id), { message: old, receivedAt: Date.now() - 1_000 });
    await h.core.store.set(storeKey('receipt', 'slack', 'event:EvOld'), { id: 'event:EvOld', body: { event_id: 'EvOld' }, receivedAt: 5 });
    h.fake.enqueue({ text: 'answered after the upgrade' });
    await h.restart();
    expect((await h.port.waitFor(isText)).text).toBe('answered after the upgrade');
    await h.core.gateway.idle();
    expect(await h.core.store.keysWithPrefix('inbox:')).toEqual([]);
    expect(await h.core.store.keysWithPrefix('receipt:')).toEqual([]);
    const receipts = await h.core.database.db.selectFrom('hermes_receipt').selectAll().execute();
    expect(receipts.map((r) => [r.platform, r.id, JSON.parse(r.body)])).toEqual([['slack', 'event:EvOld', { event_id: 'EvOld' }]]);
    // The move happened once: a platform retry of the same message is a duplicate, and a second
    // start answers nothing again.
    expect(await h.core.gateway.handleMessage(old)).toBe('duplicate');
    await h.restart();
    await h.core.gateway.idle();
    expect(h.port.events.filter(isText)).toHaveLength(0);
    expect(h.fake.requests).toHaveLength(1);
  });

  it('moves round-2 approval requests into the table, once, and a pending one can still be decided', async () => {
    h = await startHarness();
    const args = { n: 1 };
    const record = {
      id: 'OldApprovalId00000000a', sessionId: 'slack:T1:C_OLD#old', conversation: place, turnId: 't-old', toolCallId: 'call_old', toolName: 'risky_action',
      args, argsHash: hashArgs(args), requester: user('U_OLD'), createdAt: Date.now() - 5_000, expiresAt: Date.now() + 600_000, status: 'pending',
    };
    await h.core.store.set(storeKey('approval', 'record', record.id), record);
    await h.core.store.set(storeKey('approval', 'open'), [record.id]);
    await h.restart();
    expect(await h.core.store.keysWithPrefix('approval:')).toEqual([]);
    const approvals = createApprovalStore(h.core.database, systemClock);
    expect((await approvals.listOpen()).map((r) => [r.id, r.status, r.tampered])).toEqual([[record.id, 'pending', undefined]]);
    expect((await approvals.decide(record.id, 'denied', user('U_OLD'))).applied).toBe(true);
    await h.restart();
    const after = createApprovalStore(h.core.database, systemClock);
    expect(await after.listOpen()).toEqual([]);
    expect((await after.get(record.id))?.status).toBe('denied');
  });
});
