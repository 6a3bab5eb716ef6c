import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { createApprovalStore } from '../../src/state/approvals/approval-store.js';
import { systemClock } from '../../src/basics/clock.js';
import { reminderTools } from '../../tools/reminders.js';
import { EMPTY_MENTION, RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { createSessionStore } from '../../src/state/sessions/session-store.js';
import { conversationKey, type InboundMessage } from '../../src/basics/types.js';
import { clockOrderKey } from '../../src/gateway/order-key.js';
import { startFakeOpenAI, type ChatCompletionRequestBody, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { conv, isApproval, isText, startHarness, user, type Harness, type PortEvent } from '../helpers/core-harness.js';
import { freshSchema, postgresForTests } from '../helpers/postgres.js';

/**
 * Two real cores (two instances) on one real PostgreSQL database, each with its own data dir and
 * recording port, sharing the fake model. Answers may leave through either instance's port, so
 * every check looks at both.
 */
const pgUrl = await postgresForTests();

let fake: FakeOpenAI;
let schema: Awaited<ReturnType<typeof freshSchema>> | undefined;
const running: Harness[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((h) => h.close().catch(() => undefined)));
  await schema?.drop();
  schema = undefined;
  fake.setHandler(() => ({ text: 'ok' }));
});

async function twoInstances(tools: ReturnType<typeof defineTool>[] = []): Promise<[Harness, Harness]> {
  schema = await freshSchema(pgUrl!);
  const start = () =>
    startHarness({
      fake,
      // Ordering and one-at-a-time per session are under test: messages queue rather than steer.
      env: { HERMES_STORE_URL: schema!.url, HERMES_BUSY_MODE: 'queue' },
      extraTools: tools,
      core: { clusterTiming: { leaseMs: 1_500, pollMs: 200 } },
    });
  const a = await start();
  running.push(a);
  const b = await start();
  running.push(b);
  return [a, b];
}

const texts = (...hs: Harness[]) => hs.flatMap((h) => h.port.events.filter(isText).map((e) => e.text));
async function waitForTexts(hs: Harness[], n: number, timeoutMs = 20_000): Promise<string[]> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const all = texts(...hs);
    if (all.length >= n) return all;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${n} answers; got ${JSON.stringify(texts(...hs))}`);
}

let n = 0;
const place = conv('C_cluster', { threadId: '9.9' });
const alice = user('U_ALICE');
function msg(text: string, over: Partial<InboundMessage> = {}): InboundMessage {
  n++;
  return { id: `m${n}-${Date.now()}`, conversation: place, speaker: alice, text, mentioned: true, replyTo: '9.9', ...over };
}

type Sent = { role: string; content?: string | null };
const userTexts = (req: ChatCompletionRequestBody) =>
  (req.messages as Sent[]).filter((m) => m.role === 'user').map((m) => String(m.content).replace(/^\[from [^\]]*\] /, ''));

describe.skipIf(!pgUrl)('two instances on one PostgreSQL database', () => {
  it('answers one event once when it is delivered to both instances', async () => {
    const [a, b] = await twoInstances();
    fake.setHandler(() => ({ text: 'one answer', delayMs: 50 }));
    const event = msg('hello both');
    const verdicts = await Promise.all([a.core.gateway.handleMessage(event), b.core.gateway.handleMessage({ ...event })]);
    expect([...verdicts].sort()).toEqual(['duplicate', 'queued']);
    await waitForTexts([a, b], 1);
    await Promise.all([a.core.gateway.idle(), b.core.gateway.idle()]);
    // A retry a moment later, to either instance, is a duplicate as well.
    expect(await b.core.gateway.handleMessage({ ...event })).toBe('duplicate');
    expect(await a.core.gateway.handleMessage({ ...event })).toBe('duplicate');
    expect(texts(a, b)).toEqual(['one answer']);
    expect(fake.requests.filter((r) => userTexts(r).includes('hello both'))).toHaveLength(1);
  });

  it('runs 10 messages to one session, sent alternately to the two instances, in order and never two at once', async () => {
    const [a, b] = await twoInstances();
    const before = fake.requests.length;
    let inFlight = 0;
    let overlapped = false;
    fake.setHandler(async (req) => {
      inFlight++;
      if (inFlight > 1) overlapped = true;
      await new Promise((r) => setTimeout(r, 30));
      inFlight--;
      return { text: `answer to ${userTexts(req).at(-1)}` };
    });
    for (let i = 1; i <= 10; i++) await (i % 2 ? a : b).core.gateway.handleMessage(msg(`message ${i}`));
    const answers = await waitForTexts([a, b], 10, 30_000);
    expect(overlapped).toBe(false);
    // Each model call saw exactly the earlier messages, each already answered: nothing overlapped or jumped the queue.
    const calls = fake.requests.slice(before);
    expect(calls).toHaveLength(10);
    calls.forEach((req, i) => {
      expect(userTexts(req)).toEqual(Array.from({ length: i + 1 }, (_, k) => `message ${k + 1}`));
      const assistants = (req.messages as Sent[]).filter((m) => m.role === 'assistant').map((m) => m.content);
      expect(assistants).toEqual(Array.from({ length: i }, (_, k) => `answer to message ${k + 1}`));
    });
    expect([...answers].sort()).toEqual(Array.from({ length: 10 }, (_, k) => `answer to message ${k + 1}`).sort());
  });

  it('applies a double click that reaches both instances once, and runs the tool once', async () => {
    const runs: unknown[] = [];
    const risky = defineTool({
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
    const [a, b] = await twoInstances([risky]);
    fake.enqueue({ toolCalls: [{ id: 'call_x', name: 'risky_action', arguments: { target: 'prod' } }] });
    await a.core.gateway.handleMessage(msg('do the risky thing'));
    const prompt = await Promise.race([a.port.waitFor(isApproval, 20_000), b.port.waitFor(isApproval, 20_000)]);
    // The buttons exist once the post returned; its reference is stored right after.
    for (let i = 0; i < 400 && !(await createApprovalStore(a.core.database, systemClock).get(prompt.view.id))?.messageRef; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    fake.enqueue({ text: 'Done on prod.' });
    const clicks = await Promise.all([
      a.core.gateway.decideApproval({ approvalId: prompt.view.id, decision: 'approve', decidedBy: alice }),
      b.core.gateway.decideApproval({ approvalId: prompt.view.id, decision: 'approve', decidedBy: alice }),
    ]);
    expect(clicks.map((c) => c.kind).sort()).toEqual(['already', 'applied']);
    expect(clicks.filter((c) => c.kind === 'already')).toHaveLength(1);
    expect(await waitForTexts([a, b], 1)).toEqual(['Done on prod.']);
    await Promise.all([a.core.gateway.idle(), b.core.gateway.idle()]);
    expect(runs).toEqual([{ target: 'prod' }]);
    const resolved = [...a.port.events, ...b.port.events].filter((e: PortEvent) => e.kind === 'resolved');
    expect(resolved).toHaveLength(1);
  });

  // A turn of a session it started reads no noted messages (session-store.ts `neverJoined`): only
  // right when the conversation was not joined before. Joined without a session (an answer outside
  // any turn), a message noted by the other instance must still reach the first turn.
  it('shows the first turn of a thread the messages another instance noted there before its session began', async () => {
    const [a, b] = await twoInstances();
    const thread = conv('C_noted', { threadId: '7.7' });
    const bob = user('U_BOB', { displayName: 'Bob' });
    // An empty mention is answered at once, outside any turn, and joins the thread: no session yet.
    expect(await b.core.gateway.handleMessage(msg('', { conversation: thread, replyTo: '7.7' }))).toBe('queued');
    expect(texts(a, b)).toEqual([EMPTY_MENTION]);
    // Talk between people there is noted (on the other instance), not answered.
    const noted = await a.core.gateway.handleMessage(msg('Carol, the deploy key is in the vault', { conversation: thread, speaker: bob, mentioned: false, mentionsOthers: true, replyTo: '7.7' }));
    expect(noted).toBe('noted');
    const since = fake.requests.length;
    fake.setHandler(() => ({ text: 'it is in the vault' }));
    await b.core.gateway.handleMessage(msg('where is the deploy key?', { conversation: thread, replyTo: '7.7' }));
    await waitForTexts([a, b], 2);
    const seen = fake.requests.slice(since).map((r) => JSON.stringify(r.messages));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('Carol, the deploy key is in the vault');
  });

  // While a turn runs, its session's history is answered from memory (SessionStore.hold); once it
  // ends, another instance may write the session, so the next turn here reads the table again.
  it('reads a session again after its turn ended here, seeing what was written elsewhere meanwhile', async () => {
    schema = await freshSchema(pgUrl!);
    const a = await startHarness({ fake, env: { HERMES_STORE_URL: schema.url, HERMES_BUSY_MODE: 'queue' }, core: { clusterTiming: { leaseMs: 1_500, pollMs: 200 } } });
    running.push(a);
    const thread = conv('C_held', { threadId: '8.8' });
    fake.setHandler((req) => ({ text: `answer to ${userTexts(req).at(-1)}` }));
    // The first turn starts the session here and runs from memory.
    await a.core.gateway.handleMessage(msg('first question', { conversation: thread, replyTo: '8.8' }));
    expect(await waitForTexts([a], 1)).toEqual(['answer to first question']);
    await a.core.gateway.idle();
    // Another instance's turn writes to the session (as one would after this one released the lane).
    const elsewhere = createSessionStore(a.core.database, systemClock);
    const session = await elsewhere.current(thread);
    await elsewhere.append(session.id, [{ role: 'user', content: 'written by the other instance' }, { role: 'assistant', content: 'noted elsewhere' }]);
    const since = fake.requests.length;
    await a.core.gateway.handleMessage(msg('second question', { conversation: thread, replyTo: '8.8' }));
    expect(await waitForTexts([a], 2)).toEqual(['answer to first question', 'answer to second question']);
    const second = fake.requests.slice(since)[0]!;
    expect(userTexts(second)).toEqual(['first question', 'written by the other instance', 'second question']);
  });

  it('stops a turn running on one instance when /hermes stop reaches the other', async () => {
    const [a, b] = await twoInstances();
    fake.setHandler((req) => (userTexts(req).at(-1) === 'slow task' ? { text: 'never shown', delayMs: 60_000 } : { text: `answer to ${userTexts(req).at(-1)}` }));
    const since = fake.requests.length;
    await a.core.gateway.handleMessage(msg('slow task'));
    const runner = await waitForRunner([a, b], since);
    const other = runner === a ? b : a;
    const reply = await other.core.gateway.handleCommand({ conversation: place, speaker: alice, text: 'stop' });
    expect(reply.text).toMatch(/stopped the running task/);
    await runner.core.gateway.idle();
    const startedNext = Date.now();
    await other.core.gateway.handleMessage(msg('after the stop'));
    expect(await waitForTexts([a, b], 1)).toEqual(['answer to after the stop']);
    expect(Date.now() - startedNext).toBeLessThan(20_000);
    expect(texts(a, b)).not.toContain('never shown');
  });

  it('leaves a turn cut off by a shutdown to the other instance, which reports it interrupted', async () => {
    const [a, b] = await twoInstances();
    fake.setHandler((req) => (userTexts(req).at(-1) === 'slow task' ? { text: 'never shown', delayMs: 60_000 } : { text: `answer to ${userTexts(req).at(-1)}` }));
    const since = fake.requests.length;
    await a.core.gateway.handleMessage(msg('slow task'));
    await b.core.gateway.handleMessage(msg('queued behind it'));
    const runner = await waitForRunner([a, b], since);
    const other = runner === a ? b : a;
    running.splice(running.indexOf(runner), 1);
    await runner.close();
    expect(await waitForTexts([other], 2)).toEqual([RESTART_INTERRUPTED, 'answer to queued behind it']);
    expect(fake.requests.slice(since).filter((r) => userTexts(r).at(-1) === 'slow task')).toHaveLength(1);
  });

  it('answers a message whose row an instance claimed and never ran (a claim back after its lease): claimed before is not a restart', async () => {
    const [a, b] = await twoInstances();
    fake.setHandler((req) => ({ text: `answer to ${userTexts(req).at(-1)}` }));
    // The row as a late claim leaves it: counted as an attempt by an instance whose claim came back
    // after its lease (so it did not run it, work-loop.ts confirmLate), the lease run out. The
    // instance that takes it over runs it with startedBefore; nothing of the turn is in the session.
    const m = msg('claimed late');
    const now = Date.now();
    await a.core.database.db
      .insertInto('hermes_work')
      .values({ id: `msg:${m.conversation.platform}:${m.id}`, kind: 'turn', lane: conversationKey(m.conversation), order_key: clockOrderKey(now, m.id), due_at: now, payload: JSON.stringify({ kind: 'message', message: m }), claimed_by: 'late-instance', claimed_until: now - 1, attempts: 1, created_at: now })
      .execute();
    // Found by either instance's poll (200 ms).
    expect(await waitForTexts([a, b], 1)).toEqual(['answer to claimed late']);
    await Promise.all([a.core.gateway.idle(), b.core.gateway.idle()]);
    expect(texts(a, b)).not.toContain(RESTART_INTERRUPTED);
    expect(await a.core.database.db.selectFrom('hermes_work').selectAll().execute()).toEqual([]);
  });

  it('fires a reminder once with two instances running', async () => {
    const [a, b] = await twoInstances([...reminderTools]);
    const at = new Date(Date.now() + 3_000).toISOString();
    fake.enqueue({ toolCalls: [{ name: 'create_reminder', arguments: { text: 'water the plants', at } }] }, { text: 'I will remind you.' });
    await a.core.gateway.handleMessage(msg('remind me to water the plants'));
    expect(await waitForTexts([a, b], 1)).toEqual(['I will remind you.']);
    const id = await findReminderId(a);
    expect(id).not.toBe('');
    // A third instance started now: three work queues race for the reminder's row at its due time,
    // and the claim in the database (FOR UPDATE SKIP LOCKED) lets one win.
    const c = await startHarness({ fake, // Ordering and one-at-a-time per session are under test: messages queue rather than steer.
      env: { HERMES_STORE_URL: schema!.url, HERMES_BUSY_MODE: 'queue' }, extraTools: [...reminderTools], core: { clusterTiming: { leaseMs: 1_500, pollMs: 200 } } });
    running.push(c);
    const all = running;
    const fired = await waitForTexts(all, 2, 20_000);
    expect(fired.filter((t) => t.includes('water the plants'))).toHaveLength(1);
    // Wait until the reminder's record says fired, then count again: no second delivery.
    for (let i = 0; i < 200; i++) {
      const r = await a.core.database.db.selectFrom('hermes_reminder').select('status').where('id', '=', id).executeTakeFirst();
      if (r?.status === 'fired') break;
      await new Promise((res) => setTimeout(res, 25));
    }
    await Promise.all(all.map((h) => h.core.gateway.idle()));
    expect(texts(...all).filter((t) => t.includes('water the plants'))).toHaveLength(1);
  });
});

/** The instance whose gateway is running a turn (its work queue holds a session). */
async function waitForRunner(hs: Harness[], since: number): Promise<Harness> {
  for (let i = 0; i < 800; i++) {
    const busy = hs.find((h) => h.core.gateway.queueSize() > 0);
    if (busy && fake.requests.slice(since).some((r) => userTexts(r).at(-1) === 'slow task')) return busy;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no instance started the slow turn');
}

async function findReminderId(h: Harness): Promise<string> {
  const row = await h.core.database.db.selectFrom('hermes_reminder').select('id').where('owner_key', '=', 'slack:T1:U_ALICE').executeTakeFirst();
  return row?.id ?? '';
}
