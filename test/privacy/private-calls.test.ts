import { afterEach, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { memoryTools } from '../../tools/memory.js';
import { reminderTools } from '../../tools/reminders.js';
import { scheduleTools } from '../../tools/schedules.js';
import { hidePrivateCalls } from '../../src/runtime/context/private-calls.js';
import { conv, isApproval, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { ChatMessage, InboundMessage } from '../../src/basics/types.js';

/**
 * Item: another user's facts must not reach the model through shared history. Alice's private
 * calls (facts, reminders) stay in the session, but on bob's turn the model sees stubs.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  if (h) await rm(h.dataDir, { recursive: true, force: true });
  h = undefined;
});

const thread = conv('C1', { threadId: '9.1' });
const dm = conv('D1', { isDm: true });
const alice = user('UALICE');
const bob = user('UBOB');
let n = 0;
const msg = (speaker: typeof alice, text: string, conversation = thread): InboundMessage => ({
  id: `p${++n}-${Date.now()}`, conversation, speaker, text, mentioned: true, replyTo: conversation.threadId,
});
const requestText = (h: Harness, i: number) => JSON.stringify(h.fake.requests[i]!.messages);

async function turn(h: Harness, m: InboundMessage, replies: Parameters<Harness['fake']['enqueue']>): Promise<void> {
  // Generous: the first facts prompt loads the tokenizer, which takes seconds on a busy machine.
  const before = h.port.texts().length;
  h.fake.enqueue(...replies);
  await h.core.gateway.handleMessage(m);
  await h.port.waitForCount(isText, before + 1, 60_000);
  await h.core.gateway.idle();
}

describe('private tool calls in shared sessions', () => {
  it("hides alice's fact calls and reminder calls (a DM fact included) from the model on bob's turn, and shows them again on hers", { timeout: 120_000 }, async () => {
    h = await startHarness({ tools: [...memoryTools, ...reminderTools], env: { HERMES_TIMEZONE: 'UTC' } });
    // Alice saves a fact in a DM, then in the shared thread recalls it and sets a reminder.
    await turn(h, msg(alice, 'remember my locker code', dm), [
      { toolCalls: [{ id: 'c_dm', name: 'remember_fact', arguments: { fact: 'Locker code is 4471-SECRET.' } }] },
      { text: 'Saved.' },
    ]);
    await turn(h, msg(alice, 'what do you know about me? and remind me to take my pills'), [
      { toolCalls: [
        { id: 'c_recall', name: 'recall_facts', arguments: {} },
        { id: 'c_rem', name: 'create_reminder', arguments: { text: 'take the PILLS-XYZ', at: new Date(Date.now() + 86_400_000).toISOString() } },
      ] },
      { text: 'Done.' },
    ]);
    const aliceSaw = requestText(h, h.fake.requests.length - 1);
    expect(aliceSaw).toContain('4471-SECRET'); // her own turn: the result is there
    expect(aliceSaw).toContain('PILLS-XYZ');
    expect(aliceSaw).toMatch(/Reminder \w+ set for/);

    const firstBob = h.fake.requests.length;
    await turn(h, msg(bob, 'what did we talk about?'), [{ text: 'Not much.' }]);
    const bobSaw = requestText(h, firstBob);
    expect(bobSaw).not.toContain('4471-SECRET');
    expect(bobSaw).not.toContain('PILLS-XYZ');
    expect(bobSaw).toContain('recall_facts result hidden: it belongs to another user');
    expect(bobSaw).toContain('create_reminder result hidden');

    const aliceAgain = h.fake.requests.length;
    await turn(h, msg(alice, 'and again?'), [{ text: 'Sure.' }]);
    expect(requestText(h, aliceAgain)).toContain('4471-SECRET');
  });

  it("hides alice's schedule calls (create after approval, list, cancel) from the model on bob's turn, and shows them on hers", { timeout: 120_000 }, async () => {
    h = await startHarness({ tools: scheduleTools, env: { HERMES_TIMEZONE: 'UTC' } });
    // schedule_task asks first: the call is approved, then its result joins the history.
    h.fake.enqueue({ toolCalls: [{ id: 's_new', name: 'schedule_task', arguments: { task: 'post the DIGEST-SECRET-77 summary', schedule: '0 9 * * *', name: 'Alice digest' } }] });
    await h.core.gateway.handleMessage(msg(alice, 'every morning post my digest'));
    const shown = await h.port.waitFor(isApproval);
    h.fake.enqueue({ text: 'Scheduled.' });
    await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: alice });
    await h.port.waitForCount(isText, 1, 60_000);
    await h.core.gateway.idle();
    await turn(h, msg(alice, 'list them, and cancel the old one'), [
      { toolCalls: [
        { id: 's_list', name: 'list_scheduled_tasks', arguments: {} },
        { id: 's_cancel', name: 'cancel_scheduled_task', arguments: { id: 'CANCEL-ID-55' } },
      ] },
      { text: 'Here they are.' },
    ]);
    const aliceSaw = requestText(h, h.fake.requests.length - 1);
    expect(aliceSaw).toMatch(/Scheduled task \w+ \(\\"Alice digest\\"\) created/);
    expect(aliceSaw).toContain('DIGEST-SECRET-77');
    expect(aliceSaw).toContain('CANCEL-ID-55');

    const firstBob = h.fake.requests.length;
    await turn(h, msg(bob, 'what is scheduled here?'), [{ text: 'Not telling.' }]);
    const bobSaw = requestText(h, firstBob);
    expect(bobSaw).not.toContain('DIGEST-SECRET-77');
    expect(bobSaw).not.toContain('Alice digest');
    expect(bobSaw).not.toContain('CANCEL-ID-55');
    for (const tool of ['schedule_task', 'list_scheduled_tasks', 'cancel_scheduled_task']) expect(bobSaw).toContain(`${tool} result hidden: it belongs to another user`);

    const aliceAgain = h.fake.requests.length;
    await turn(h, msg(alice, 'thanks'), [{ text: 'Welcome.' }]);
    expect(requestText(h, aliceAgain)).toContain('DIGEST-SECRET-77');
  });

  it('stubs private calls for every viewer when no viewer is given (the running summary)', () => {
    const history: ChatMessage[] = [
      { role: 'user', content: 'hi', speaker: user('UALICE') },
      { role: 'assistant', content: null, toolCalls: [{ id: 'x', name: 'recall_facts', arguments: '{"query":"code"}' }, { id: 'y', name: 'calculator', arguments: '{"expression":"1+1"}' }] },
      { role: 'tool', toolCallId: 'x', name: 'recall_facts', content: 'code 1234' },
      { role: 'tool', toolCallId: 'y', name: 'calculator', content: '2' },
    ];
    const isPrivate = (name: string) => name === 'recall_facts';
    const hidden = JSON.stringify(hidePrivateCalls(history, undefined, isPrivate));
    expect(hidden).not.toContain('1234');
    expect(hidden).not.toContain('"query');
    expect(hidden).toContain('1+1');
    expect(hidePrivateCalls(history, user('UALICE'), isPrivate)).toBe(history);
  });
});
