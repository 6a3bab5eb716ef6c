import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { reminderTools } from '../../tools/reminders.js';
import { readTraceStats } from '../../src/operations/stats/trace-stats.js';
import type { InboundMessage } from '../../src/basics/types.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { ManualClock, settle } from '../reminders/manual-clock.js';

/**
 * Daily tokens and the message rate through the real core (SQLite on disk, the openai SDK against
 * the fake model, whose replies report the usage the budget counts).
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

let n = 0;
function dm(text: string, userId = 'U1'): InboundMessage {
  n++;
  return { id: `lim${n}-${Date.now()}`, conversation: conv(`D_${userId}`, { isDm: true }), speaker: user(userId), text, mentioned: false, replyTo: `ts${n}` };
}

const texts = (h: Harness, channelId: string) => h.port.texts(channelId);
/** Refusals by reason in the bot's traces (written asynchronously: polled until `expected` shows). */
async function refusalsReach(h: Harness, expected: Record<string, number>): Promise<Record<string, number>> {
  let last: Record<string, number> = {};
  await settle(async () => {
    // Every record so far (a test's manual clock may run ahead of the wall clock).
    last = (await readTraceStats(path.join(h.dataDir, 'traces'), { since: 0, until: Date.now() + 3_600_000 })).refusals;
    return JSON.stringify(last) === JSON.stringify(expected);
  }, 10_000).catch(() => undefined);
  return last;
}

describe('HERMES_USER_DAILY_TOKENS', () => {
  it('a turn crossing the line finishes its step, then ends with a note; later messages are refused without a model call, also after a restart', async () => {
    h = await startHarness({ tools: [calculator], env: { HERMES_USER_DAILY_TOKENS: '1000', HERMES_ADMINS: 'slack:UADMIN' } });
    h.fake.enqueue(
      { toolCalls: [{ id: 'a', name: 'calculator', arguments: { expression: '1+1' } }], usage: { prompt_tokens: 700, completion_tokens: 100 } },
      { toolCalls: [{ id: 'b', name: 'calculator', arguments: { expression: '2+2' } }], usage: { prompt_tokens: 300, completion_tokens: 50 } },
    );
    await h.core.gateway.handleMessage(dm('add things up'));
    const stop = await h.port.waitFor(isText);
    expect(stop.text).toMatch(/^I stopped after 2 steps without finishing: you have used your daily allowance of 1,000 tokens \(1,150 today; HERMES_USER_DAILY_TOKENS\)\. It resets at 00:00 UTC, in \d/);
    expect(h.fake.requests).toHaveLength(2);
    await h.core.gateway.idle();

    await h.core.gateway.handleMessage(dm('one more?'));
    await h.port.waitForCount(isText, 2);
    expect(texts(h, 'D_U1')[1]).toMatch(/^You have used your daily allowance of 1,000 tokens \(1,150 today; HERMES_USER_DAILY_TOKENS\), so I did not run this\. It resets at 00:00 UTC, in /);
    expect(h.fake.requests).toHaveLength(2);

    // Others, and admins whatever they spend, are not held back by U1's day.
    h.fake.enqueue({ text: 'hi U2' }, { text: 'hi admin', usage: { prompt_tokens: 5000, completion_tokens: 5000 } }, { text: 'admin again' });
    await h.core.gateway.handleMessage(dm('hello', 'U2'));
    await h.port.waitForCount(isText, 3);
    await h.core.gateway.handleMessage(dm('hello', 'UADMIN'));
    await h.port.waitForCount(isText, 4);
    await h.core.gateway.handleMessage(dm('hello again', 'UADMIN'));
    await h.port.waitForCount(isText, 5);
    expect(texts(h, 'D_UADMIN')).toEqual(['hi admin', 'admin again']);

    await h.restart();
    await h.core.gateway.handleMessage(dm('after the restart?'));
    await h.port.waitFor(isText);
    expect(h.port.texts('D_U1')[0]).toMatch(/daily allowance of 1,000 tokens \(1,150 today/);
    expect(h.fake.requests).toHaveLength(5);

    expect(await refusalsReach(h, { daily_tokens: 3 })).toEqual({ daily_tokens: 3 });

    // The next model request carries the tool result of the step that finished, and the note.
    await h.restart({ HERMES_USER_DAILY_TOKENS: '100000' });
    h.fake.enqueue({ text: 'continuing' });
    await h.core.gateway.handleMessage(dm('continue'));
    await h.port.waitFor(isText);
    const sent = JSON.stringify(h.fake.requests[5]?.messages);
    expect(sent).toContain('"tool_call_id":"b"');
    expect(sent).toContain('daily token allowance ran out');
  });

  it('/hermes status shows the speaker their usage and limits; admins also see the top users', async () => {
    h = await startHarness({ env: { HERMES_USER_DAILY_TOKENS: '5000', HERMES_USER_RATE: '30', HERMES_ADMINS: 'slack:UADMIN' } });
    h.fake.enqueue({ text: 'one', usage: { prompt_tokens: 1200, completion_tokens: 34 } }, { text: 'two', usage: { prompt_tokens: 90, completion_tokens: 10 } });
    await h.core.gateway.handleMessage(dm('a'));
    await h.port.waitFor(isText);
    await h.core.gateway.handleMessage(dm('b', 'U2'));
    await h.port.waitForCount(isText, 2);
    const mine = await h.core.gateway.handleCommand({ conversation: conv('D_U1', { isDm: true }), speaker: user('U1'), text: 'status' });
    expect(mine.text).toContain('Today (UTC): 1,234 of your 5,000 daily tokens used (resets at 00:00 UTC, in ');
    expect(mine.text).toContain('Message rate: at most 30 per minute.');
    expect(mine.text).not.toContain('Top users');
    const admin = await h.core.gateway.handleCommand({ conversation: conv('D_UADMIN', { isDm: true }), speaker: user('UADMIN'), text: 'status' });
    expect(admin.text).toContain('Top users today: slack:U1 1,234, slack:U2 100');
  });
});

describe('HERMES_USER_RATE', () => {
  it('answers each message of a burst over the limit once, queues none of them, and keeps the bucket across a restart', async () => {
    h = await startHarness({ env: { HERMES_USER_RATE: '2', HERMES_BUSY_MODE: 'queue' } });
    h.fake.setHandler(() => ({ text: 'answered' }));
    const verdicts = [];
    for (let i = 0; i < 5; i++) verdicts.push(await h.core.gateway.handleMessage(dm(`burst ${i}`)));
    expect(verdicts).toEqual(['queued', 'queued', 'ignored', 'ignored', 'ignored']);
    await h.port.waitForCount(isText, 5);
    await h.core.gateway.idle();
    const all = texts(h, 'D_U1');
    expect(all.filter((t) => t === 'answered')).toHaveLength(2);
    const refused = all.filter((t) => t !== 'answered');
    expect(refused).toHaveLength(3);
    for (const t of refused) expect(t).toMatch(/^You are sending messages faster than the limit of 2 per minute \(HERMES_USER_RATE\), so I did not run this one\. You can send again in \d+ s\.$/);
    expect(h.fake.requests).toHaveLength(2);

    // A slash task counts too, and is answered privately.
    const task = await h.core.gateway.handleCommand({ conversation: conv('C1'), speaker: user('U1'), text: 'summarise the channel' });
    expect(task).toMatchObject({ kind: 'private', text: expect.stringMatching(/limit of 2 per minute/) });

    await h.restart();
    expect(await h.core.gateway.handleMessage(dm('right after restart'))).toBe('ignored');
    expect(await h.core.gateway.handleMessage(dm('hi', 'U2'))).toBe('queued');
    await h.core.gateway.idle();
    expect(h.fake.requests).toHaveLength(3);
    expect(await refusalsReach(h, { rate_limit: 5 })).toEqual({ rate_limit: 5 });
  });

  it('0 turns the limit off (each message its own turn: HERMES_BUSY_MODE=queue)', async () => {
    h = await startHarness({ env: { HERMES_USER_RATE: '0', HERMES_BUSY_MODE: 'queue' } });
    h.fake.setHandler(() => ({ text: 'ok' }));
    for (let i = 0; i < 30; i++) expect(await h.core.gateway.handleMessage(dm(`m${i}`))).toBe('queued');
    await h.core.gateway.idle();
    expect(h.fake.requests).toHaveLength(30);
  });
});

describe('HERMES_ALLOW at the core', () => {
  it('a reminder whose creator is no longer allowed is not posted', async () => {
    // The core's clock is the test's: the reminder comes due when the test moves time past it.
    const clock = new ManualClock(Date.now());
    h = await startHarness({ tools: reminderTools, env: { HERMES_ALLOW: 'slack:U42' }, core: { clock } });
    const place = conv('C_rem');
    const at = new Date(clock.now() + 2500).toISOString();
    h.fake.enqueue({ toolCalls: [{ name: 'create_reminder', arguments: { text: 'water the plants', at } }] }, { text: 'I will remind you.' });
    await h.core.gateway.handleMessage({ id: 'r1', conversation: place, speaker: user('U42'), text: 'remind me', mentioned: true, replyTo: 'r1' });
    expect((await h.port.waitFor(isText)).text).toBe('I will remind you.');
    await h.restart({ HERMES_ALLOW: 'slack:U1' });
    clock.advance(3000);
    expect(await refusalsReach(h, { not_allowed: 1 })).toEqual({ not_allowed: 1 });
    expect(h.port.texts()).toEqual([]);
  });
});
